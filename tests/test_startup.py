"""`mcp-hazard serve` over stdio starts with only what serving needs: no rich, no structlog, no other command's
modules (a desktop assistant starts one process per episode, and every import is paid before the first listing).
Speed itself is measured in bench/startup.py, never asserted here. Also: a command's parser built alone is the same
parser, log lines keep their layout on stderr, and a bad option is refused before the SDK is imported."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import WAIT_S

from mcp_hazard import logs
from mcp_hazard.cli import COMMANDS, _command_word, _subparser, build_parser
from tests.e2e.support import ROOT

# Packages `serve` over stdio must not import: they belong to other commands or to rendering it does not do.
# (uvicorn is not among them: the SDK imports it through sse_starlette, for a bare SDK server too.)
FORBIDDEN = (
    "rich", "structlog", "pygments",
    "mcp_hazard.generate", "mcp_hazard.scoring", "mcp_hazard.runner", "mcp_hazard.agents", "mcp_hazard.proxy",
    "mcp_hazard.commands.validate", "mcp_hazard.commands.score",
    # only when the condition asks for them (an intervention, the guarded profile) or traces are read back
    "mcp_hazard.interventions.rename", "mcp_hazard.interventions.names", "mcp_hazard.interventions.replace",
    "mcp_hazard.server.guard", "mcp_hazard.trace.reader",
)  # fmt: skip

REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_fare",
                                                                   "arguments": {"flight_id": "AU-426"}}},
]  # fmt: skip


def test_serve_over_stdio_imports_only_what_serving_needs(tmp_path: Path) -> None:
    """The whole import closure of a real `serve` process that answers a listing and a call, read from
    `-X importtime` (every module imported, whenever it was)."""
    errors = tmp_path / "stderr.txt"
    with errors.open("w", encoding="utf-8") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "mcp_hazard", "serve", "scenarios/travel.yaml", "--task",
             "fare-class", "--trace-dir", str(tmp_path / "runs")],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
        assert server.stdin is not None and server.stdout is not None
        answers = {}
        try:
            for request in REQUESTS:  # one at a time: each answer is read before the next request is sent
                server.stdin.write(json.dumps(request) + "\n")
                server.stdin.flush()
                if "id" in request:
                    answer = json.loads(server.stdout.readline())
                    answers[answer["id"]] = answer
            server.stdin.close()
            assert server.wait(timeout=WAIT_S) == 0
        finally:
            if server.poll() is None:
                server.kill()
    assert answers[2]["result"]["tools"] and answers[3]["result"]["structuredContent"]["fare_class"] == "Standard"
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", errors.read_text(), re.M))
    assert "mcp_hazard.server.stdio" in imported  # the parse works: the server's own modules are there
    bad = sorted(m for m in imported if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert bad == [], f"serve imported {bad}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_parser_built_alone_is_the_same(name: str) -> None:
    whole, alone = _subparser(build_parser(), name), _subparser(build_parser(name), name)
    assert alone.prog == f"mcp-hazard {name}"  # the command's own parser, not the top one
    assert alone.format_help() == whole.format_help()
    assert [a.option_strings for a in alone._actions] == [a.option_strings for a in whole._actions]


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["serve", "scenarios/"], "serve"),
        (["--log-level", "debug", "serve", "x"], "serve"),
        (["--log-level=info", "score", "runs/"], "score"),
        (["--help"], None),
        (["--version"], None),
        (["scroe", "runs/"], None),  # a typo gets the whole parser, and with it "did you mean"
        (["completion", "bash"], None),  # its script is written from every command's parser
        ([], None),
    ],
)
def test_the_command_word_is_found_after_the_global_options(argv: list[str], command: str | None) -> None:
    assert _command_word(argv) == command


def test_log_lines_keep_their_layout_and_level(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "_threshold", logging.INFO)  # what configure_logging("info") sets for these lines
    logs.log.debug("not shown", episode="e")
    logs.log.info("episode started", episode="e1", task="fare-class", slot=3)
    try:
        raise ZeroDivisionError("boom")
    except ZeroDivisionError:
        logs.log.exception("tool call crashed", tool="get_fare")
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z \[info     \] episode started {16}"
                        r"episode=e1 task=fare-class slot=3", lines[0])  # fmt: skip
    assert "[error    ] tool call crashed" in lines[1] and lines[1].endswith("tool=get_fare")
    assert lines[2] == "Traceback (most recent call last):" and lines[-1] == "ZeroDivisionError: boom"
    assert "not shown" not in err


def _imported(stderr: str) -> set[str]:
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", stderr, re.M))


@pytest.mark.parametrize("command", ["serve", "validate", "run", "verify"])
def test_a_bad_hazard_option_is_refused_before_the_sdk_is_imported(command: str, tmp_path: Path) -> None:
    """A mistyped `--hazard` is one line in well under a second: the option is parsed before the server, the agents
    and the SDK (about a second and a half of imports) are loaded."""
    where = {"serve": ["--task", "fare-class"], "validate": ["--seeds", "0"], "run": ["--out", str(tmp_path / "run")],
             "verify": ["--out", str(tmp_path / "run")]}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mcp_hazard", command, "scenarios/travel.yaml", *where[command],
         "--hazard", "transient_error:times=-1"],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and lines == [
        "mcp-hazard: error: --hazard 'transient_error:times=-1': schedule.times: Input should be greater than 0, got -1"
    ]
    imported = _imported(done.stderr)
    assert "mcp_hazard.hazards.instances" in imported and "mcp_types" not in imported and "mcp" not in imported
    assert not (tmp_path / "run").exists()  # nothing written for a run that never started


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["replay", "missing.jsonl"],
            "mcp-hazard: error: missing.jsonl: cannot read trace: No such file or directory",
        ),
        # A script is read like a scenario file: its problems are `file: message`, as a scenario file's are.
        (["replay", "missing.yaml"], "missing.yaml: cannot read file: No such file or directory"),
        (["verify", "missing.yaml"], "mcp-hazard: error: missing.yaml: no such file or directory"),
    ],
)
def test_a_missing_file_is_refused_before_the_sdk_is_imported(argv: list[str], message: str, tmp_path: Path) -> None:
    """What `replay` replays and what `verify` runs are read before the runner, the server and the SDK load."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "mcp_hazard", *argv], cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=WAIT_S,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(message)
    imported = _imported(done.stderr)
    assert "mcp_hazard.cli" in imported and "mcp_types" not in imported and "mcp" not in imported

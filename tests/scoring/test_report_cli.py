"""`mcp-hazard score` as a user runs it: real traces, every report format, damaged input, through `main()` (what it
prints and writes is the subject), and as a real process for the modules it imports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CliRun, run_main

from .test_report_support import SCENARIOS, embedded_episodes, markdown_rows, read_html, report_of, write_traces

REPO = SCENARIOS.parent


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_traces(tmp_path_factory.mktemp("cli-traces"), agents=("golden",), files=("travel.yaml",),
                        hazards=(None, "transient_error"))  # fmt: skip


def episodes(traces: Path) -> int:
    return len(list(traces.glob("*.jsonl")))


def score(*args: str) -> CliRun:
    """`mcp-hazard score ARGS` through `main()` in this process: for what it prints and writes."""
    return run_main("score", *args, cwd=REPO)


def test_html_report_is_written_to_a_file(traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = score(str(traces), "--format", "html", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.is_file()
    assert f"wrote html report of {episodes(traces)} episodes to {out}" in done.stderr
    page = out.read_text(encoding="utf-8")
    reader = read_html(page)
    assert reader.errors == [] and 'id="plot-compounding-by-agent"' in page
    assert done.stdout == ""
    rows = embedded_episodes(page)  # each episode with its timeline, for the drill-down
    assert len(rows) == episodes(traces)
    assert all(row["timeline"] and row["timeline"][-1][1] == "ended" for row in rows)


# Scoring reads traces and scenario files; it never speaks MCP, so the SDK and its web stack stay out of its process.
NOT_FOR_SCORING = (
    "mcp", "mcp_types", "uvicorn", "starlette", "httpx", "mcp_hazard.server.served_episode",
    "mcp_hazard.proxy.upstream",
)  # fmt: skip


def test_scoring_imports_no_sdk(traces: Path) -> None:
    """The whole import closure of a real `score` process, read from `-X importtime`: a proxy episode's trace is
    scored from its records (proxy/upstream_info.py), not through the SDK client."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mcp_hazard", "score", str(traces), "--format", "json"],
        cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["overall"]["n"] == episodes(traces)
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", done.stderr, re.M))
    assert "mcp_hazard.scoring.collect" in imported and "mcp_hazard.proxy.environment" in imported
    bad = sorted(m for m in imported if any(m == f or m.startswith(f + ".") for f in NOT_FOR_SCORING))
    assert bad == [], f"score imported {bad}"


def test_markdown_report_is_printed(traces: Path) -> None:
    done = score(str(traces), "--format", "markdown")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# mcp-hazard report\n")
    report = report_of(traces)
    headline = dict((row[0], row[1]) for row in markdown_rows(done.stdout)["Overall"][1:])
    assert headline["episodes"] == str(episodes(traces)) and "success rate" not in headline  # never pooled
    ((agent, entry),) = report["groups"]["agent"].items()
    row = next(r for r in markdown_rows(done.stdout)["Agents"] if r[0] == agent)
    assert row[2].startswith(f"{entry['rate'] * 100:.1f}% [{entry['ci95'][0] * 100:.1f}–")


def test_table_is_the_default_and_out_suffix_picks_the_format(traces: Path, tmp_path: Path) -> None:
    done = score(str(traces))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"mcp-hazard scorecard: {episodes(traces)} episodes, 1 agent; each agent's success, "
        "recovery and premature answers below"
    )
    assert "Recovery by hazard kind and agent ───" in done.stdout and "Overall ───" not in done.stdout
    assert lines[-1].startswith("--verbose prints every table")
    assert len(lines) <= 40 and max(len(line) for line in lines) <= 120
    verbose = score(str(traces), "--verbose")
    assert "Overall ───" in verbose.stdout and "Error compounding by golden-path length ───" in verbose.stdout
    out = tmp_path / "report.md"
    assert score(str(traces), "--out", str(out)).returncode == 0
    assert out.read_text(encoding="utf-8").startswith("# mcp-hazard report\n")
    text = tmp_path / "report.txt"
    assert score(str(traces), "--out", str(text)).returncode == 0
    assert text.read_text(encoding="utf-8").rstrip() == verbose.stdout.rstrip()  # a file holds the whole report


def _edit_first_event(path: Path, **changes: object) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[0])
    for key, value in changes.items():
        target = event
        *parents, leaf = key.split("__")
        for parent in parents:
            target = target[parent]
        target[leaf] = value
    path.write_text("\n".join([json.dumps(event), *lines[1:]]) + "\n", encoding="utf-8")


def test_damaged_traces_become_one_line_warnings_and_the_rest_is_scored(traces: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(traces, damaged)
    truncated, unknown, future, orphan = sorted(damaged.glob("*.jsonl"))[:4]
    text = truncated.read_text(encoding="utf-8")
    truncated.write_text(text[: len(text.rstrip("\n")) - 10], encoding="utf-8")  # cut inside the last line
    lines = unknown.read_text(encoding="utf-8").splitlines()
    lines.insert(1, json.dumps({"type": "mystery_event", "seq": 1}))
    unknown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _edit_first_event(future, schema_version=99)
    _edit_first_event(orphan, scenario__path=str(tmp_path / "gone" / "travel.yaml"))

    done = score(str(damaged), "--format", "markdown")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    warnings = [line for line in done.stderr.splitlines() if line]
    assert all(line.startswith("mcp-hazard: warning: ") for line in warnings), warnings
    expected = {
        truncated: "truncated last line; skipped",
        unknown: "unknown event type 'mystery_event'; skipped",
        future: "trace schema_version 99 is newer than this mcp-hazard reads",
    }
    for path, message in expected.items():
        hits = [line for line in warnings if str(path) in line and message in line]
        assert len(hits) == 1, (message, warnings)
    # a scenario found nowhere is one warning naming it; its trace is listed as unscorable
    gone = f"scenario 'travel' (recorded path {tmp_path / 'gone' / 'travel.yaml'}, sha256 "
    assert len([line for line in warnings if gone in line and line.endswith("; 1 trace not scored")]) == 1, warnings
    assert str(orphan) in done.stdout.split("## Unscorable traces", 1)[1].split("## ", 1)[0].replace("\\", "")
    # everything else is scored: only the future and the orphaned trace are left out
    headline = dict((row[0], row[1]) for row in markdown_rows(done.stdout)["Overall"][1:])
    assert headline["episodes"] == str(episodes(traces) - 2)
    # and the report lists the same warnings, one list item each (before the sections with nothing to show)
    body = re.sub(r"\\(.)", r"\1", done.stdout.split("## Warnings", 1)[1].split("\n## ", 1)[0])
    items = [line[2:] for line in body.splitlines() if line.startswith("- ")]
    assert items == [line.removeprefix("mcp-hazard: warning: ") for line in warnings]


def test_a_trace_without_episode_ended_warns(traces: Path, tmp_path: Path) -> None:
    """docs/scoring.md: a trace with no episode_ended is scored, with a warning in the report and on stderr."""
    source = sorted(traces.glob("*.jsonl"))[0]
    lines = source.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["type"] == "episode_ended"
    (tmp_path / source.name).write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    done = score(str(tmp_path / source.name), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["episodes"] == 1
    assert "no episode_ended event" in done.stderr

"""`score` of a trace whose episode has not ended: a real `mcp-hazard proxy` in front of the reference time server,
driven by raw JSON-RPC lines over its stdin, scored while it still serves the episode and after it was killed. The
report gives one account: the episode is counted, is "unfinished" in the scorecard, in the Agents table and in the
JSON, has no verdict, and belongs to "(no agent recorded)" (the proxy was given no --agent). It used to read "1
episodes, 0 agents", then "No episodes", then a table of an agent named "unknown" at 0% success."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import WAIT_S, in_ci

from tests.runner.support import REPO_ROOT, cli_env, main_cli, no_traceback

pytestmark = pytest.mark.e2e

CALL = {"source_timezone": "Etc/UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
UNFINISHED = "1 unfinished (no episode_ended: still served, or its server was stopped first)"


def _send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    stdin.flush()


def _reply(stdout: IO[str], request_id: int) -> dict[str, Any]:
    """The response to `request_id` (notifications the proxy relays in between are passed over)."""
    while True:
        line = stdout.readline()
        assert line, "the proxy closed its stdout"
        message = json.loads(line)
        if message.get("id") == request_id:
            return dict(message)


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[subprocess.Popen[str], Path, bool]]:
    """A stdio proxy episode that made one tool call and is still being served; the proxy file's first task, or
    none (an open episode of a server with no proxy file) when the test is parametrised with `[]`; and whether its
    task has an expected answer."""
    if importlib.util.find_spec("mcp_server_time") is None:
        if in_ci():
            pytest.fail("mcp-server-time is not installed (pip install -e '.[test]')", pytrace=False)
        pytest.skip("mcp-server-time is not installed (pip install -e '.[test]')")
    file: list[str] = request.param
    traces = tmp_path / "traces"
    upstream = f"{sys.executable} -m mcp_server_time"
    command = [sys.executable, "-m", "mcp_hazard", "proxy", *file, "--upstream-cmd", upstream,
               "--trace-dir", str(traces), "--episode-id", "by-hand"]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=cli_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    timer = threading.Timer(WAIT_S, process.kill)  # a guard: a hung proxy fails the test, never hangs it
    timer.start()
    try:
        _send(
            process.stdin,
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "by-hand", "version": "1"},
                },
            },
        )
        assert "result" in _reply(process.stdout, 1)
        _send(process.stdin, {"method": "notifications/initialized"})
        _send(process.stdin, {"id": 2, "method": "tools/call", "params": {"name": "convert_time", "arguments": CALL}})
        assert "result" in _reply(process.stdout, 2)
        yield process, traces / "by-hand.jsonl", bool(file)
    finally:
        timer.cancel()
        process.kill()
        process.wait(timeout=WAIT_S)


def _score(trace: Path, out: Path) -> tuple[str, dict[str, Any]]:
    table = main_cli("score", str(trace))
    assert table.code == 0 and no_traceback(table.stderr), table.explain()
    assert "unfinished" in table.stderr, table.explain()  # the warning
    done = main_cli("score", str(trace), "--out", str(out))
    assert done.code == 0, done.explain()
    return table.stdout, json.loads(out.read_text(encoding="utf-8"))


def _one_account(text: str, report: dict[str, Any], judged: bool) -> None:
    words = " ".join(text.split())  # the terminal table wraps long lines
    apart = UNFINISHED if judged else f"{UNFINISHED}, 1 not judged (no expected answer)"
    assert words.startswith("mcp-hazard scorecard: 1 episode, 1 agent; each agent's success, recovery and premature "
                            "answers below Suite: "), text  # fmt: skip
    assert f"(1 task in 1 scenario, sha256 {report['suite']['hash'][:12]}). In no success rate: {apart}. " in words
    assert f"- Agents: No episode has a verdict: {apart}." in words, text
    assert "unknown" not in text and "No episodes" not in text, text
    assert (report["episodes"], report["unfinished"], report["not_judged"]) == (1, 1, 0 if judged else 1)
    assert report["agents"] == {} and report["overall"]["n"] == 0  # no verdict, in no success rate
    assert list(report["agent_outcomes"]) == ["(no agent recorded)"]
    (row,) = report["per_episode"]
    assert (row["agent"], row["class"], row["answer_rule"], row["correct"]) == (
        "(no agent recorded)", "unfinished", "unfinished", False)  # fmt: skip
    assert row["calls"] == 1


@pytest.mark.parametrize("served", [[str(REPO_ROOT / "proxies" / "time.yaml")], []], indirect=True,
                         ids=["task-of-a-proxy-file", "open-episode-without-a-file"])  # fmt: skip
def test_an_episode_still_served_and_then_killed_is_unfinished_in_every_part_of_the_report(
    served: tuple[subprocess.Popen[str], Path, bool], tmp_path: Path
) -> None:
    process, trace, judged = served
    deadline = time.monotonic() + WAIT_S
    while not trace.exists():
        assert time.monotonic() < deadline, f"no trace at {trace}"
        time.sleep(0.05)
    text, report = _score(trace, tmp_path / "live.json")  # while the proxy still serves the episode
    _one_account(text, report, judged)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=WAIT_S)
    assert not [line for line in trace.read_text(encoding="utf-8").splitlines() if '"episode_ended"' in line]
    text, report = _score(trace, tmp_path / "killed.json")
    _one_account(text, report, judged)

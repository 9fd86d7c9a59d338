"""A run stopped by a signal: Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM to the
runner. The run ends with one line and exit 128 + the signal; the episodes under way keep no `agent_ended`, so
`score` counts them `interrupted` (in no rate, listed in the warnings with their trace) where it used to blame the
agent with `no_answer`; and the same command runs them again, to the end. A trace of a client that `run` did not
drive has no `agent_ended` either, by design, and stays `unknown`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import WAIT_S
from mcp import Client, StdioServerParameters

from .support import (
    REPO_ROOT,
    TRAVEL,
    assert_trace_ended,
    cli_env,
    jsonl,
    main_cli,
    no_traceback,
    run_cli,
    run_log,
)

pytestmark = pytest.mark.e2e

DEADLINE = WAIT_S  # any wait on a process: far above what each step takes on a loaded 2-core machine (2-8 s)
HAZARD = "latency:seconds=4"  # the latency episode's first call waits 4 s: the signal arrives in the middle
ARGS = ["run", str(TRAVEL), "--task", "fare-class", "--agent", "naive", "--hazard", HAZARD, "--call-timeout", "20",
        "--no-progress"]  # fmt: skip
CLEAN = "naive.travel.fare-class.clean.strict.s0"
SLOW = "naive.travel.fare-class.latency-seconds-4.strict.s0"


def _wait_for_firing(process: subprocess.Popen[bytes], out: Path) -> None:
    """Until the clean episode is logged done and the slow episode's hazard has fired (its call now waits)."""
    trace, log = out / "traces" / f"{SLOW}.jsonl", out / "run.jsonl"
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline and process.poll() is None:
        fired = trace.exists() and '"hazard_fired"' in trace.read_text(encoding="utf-8")
        if fired and log.exists() and CLEAN in log.read_text(encoding="utf-8"):
            return
        time.sleep(0.05)
    raise AssertionError(f"the latency hazard did not fire within {DEADLINE}s (run exit code {process.poll()})")


def _score(out: Path) -> tuple[dict[str, Any], str]:
    """`score` in this process: what it says of a stopped run is the subject, not its process."""
    scored = main_cli("score", str(out), "--format", "json")
    assert scored.code == 0, scored.explain()
    return json.loads(scored.stdout), scored.stderr


@pytest.mark.parametrize(
    ("transport", "sig", "group"),
    [("http", signal.SIGINT, True), ("http", signal.SIGTERM, False), ("stdio", signal.SIGINT, True)],
    ids=["http-ctrl-c", "http-sigterm", "stdio-ctrl-c"],
)
def test_a_stopped_run_leaves_interrupted_episodes_that_score_apart_and_run_again(
    tmp_path: Path, transport: str, sig: signal.Signals, group: bool
) -> None:
    out = tmp_path / "out"
    command = [*ARGS, "--transport", transport, "--out", str(out)]
    with (tmp_path / "first.stdout").open("wb") as stdout, (tmp_path / "first.stderr").open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "mcp_hazard", *command], cwd=REPO_ROOT, env=cli_env(),
                                   stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                   start_new_session=True)  # fmt: skip
    try:
        _wait_for_firing(process, out)
        if group:  # what a terminal's Ctrl-C does: every process of the foreground group, stdio servers included
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
        code = process.wait(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=DEADLINE)
    stderr_text = (tmp_path / "first.stderr").read_text(encoding="utf-8")
    assert code == 128 + sig, f"exit {code}\n{stderr_text}"
    assert no_traceback(stderr_text), stderr_text
    last = stderr_text.strip().splitlines()[-1]
    assert last.startswith(f"mcp-hazard: stopped by {sig.name}: "), stderr_text
    assert "1 of 2 episodes done" in last and "run the same command again" in last, last
    assert not (out / "report.json").exists(), "a stopped run writes no report: `score` reports a half-run matrix"

    # What the stopped run left: the clean episode done and logged; the slow one cut short, without agent_ended.
    assert [(r["episode_id"], r["status"]) for r in run_log(out)] == [(CLEAN, "done")]
    assert_trace_ended(out / "traces" / f"{CLEAN}.jsonl", outcome="finished")
    cut = jsonl(out / "traces" / f"{SLOW}.jsonl")
    assert "agent_ended" not in [e["type"] for e in cut]
    assert cut[0]["run"]["runner"] is True  # `run` drove it: it would have ended it with agent_ended

    # `score`: the cut episode is ours, not the agent's: interrupted, in no rate, warned about with its trace.
    report, warnings = _score(out)
    assert report["episodes"] == 2
    assert report["infrastructure"] == {"server_crashed": 0, "interrupted": 1}
    assert report["agent_outcomes"]["naive"]["interrupted"] == 1
    assert report["overall"]["n"] == 1, "the interrupted episode is in a success rate"
    assert report["failures"]["episodes"] == {"solved": 1}, "the interrupted episode is counted as a failure"
    row = next(r for r in report["per_episode"] if r["episode_id"] == SLOW)
    assert row["agent_outcome"] == "interrupted", row
    shown = [w for w in report["warnings"] if "interrupted" in w]
    assert len(shown) == 1 and str(out / "traces" / f"{SLOW}.jsonl") in shown[0], report["warnings"]
    assert shown[0] in warnings
    overall = main_cli("score", str(out), "--format", "markdown")
    assert "| interrupted | 1 (the run was stopped before they ended: in no rate" in overall.stdout, overall.explain()

    # The same command again: the interrupted episode runs from the start and ends finished; the other is kept.
    # Over HTTP in this process (nothing stops it); a stdio server inherits the runner's stderr: a real program then.
    again = run_cli(*command, timeout=DEADLINE * 2) if transport == "stdio" else main_cli(*command)
    assert again.code == 0, again.explain()
    assert "2 episodes: 1 run, 1 already done" in again.stdout, again.explain()
    assert [(r["episode_id"], r["status"]) for r in run_log(out)[1:]] in (
        [(CLEAN, "skipped"), (SLOW, "done")], [(SLOW, "done"), (CLEAN, "skipped")],
    )  # fmt: skip
    events = assert_trace_ended(out / "traces" / f"{SLOW}.jsonl", outcome="finished")
    assert [e["type"] for e in events].count("episode_started") == 1, "the rerun appended to the cut trace"
    report, _ = _score(out)
    assert report["infrastructure"]["interrupted"] == 0 and report["overall"]["n"] == 2
    assert not [w for w in report["warnings"] if "interrupted" in w]


@pytest.mark.anyio
async def test_a_trace_of_a_client_that_run_did_not_drive_is_not_interrupted(tmp_path: Path) -> None:
    """`serve` over stdio to a bare client that leaves without answering: no agent_ended by design, so `unknown`."""
    traces = tmp_path / "traces"
    server = StdioServerParameters(command=sys.executable, args=["-m", "mcp_hazard", "serve", str(TRAVEL), "--task",
                                   "fare-class", "--trace-dir", str(traces), "--episode-id", "bare-1"])  # fmt: skip
    with anyio.fail_after(DEADLINE):
        async with Client(server) as client:
            await client.list_tools()
    assert "runner" not in jsonl(traces / "bare-1.jsonl")[0]["run"]
    report, warnings = await anyio.to_thread.run_sync(_score, traces)
    assert report["infrastructure"]["interrupted"] == 0
    assert [r["agent_outcome"] for r in report["per_episode"]] == ["unknown"]
    assert "interrupted" not in warnings

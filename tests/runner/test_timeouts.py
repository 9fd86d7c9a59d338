"""An episode stopped by `run --timeout` is a timeout, also on a loaded machine. There the event loop may not come
back until after an episode's deadline; the stop then reaches the in-memory client's own task before the agent's,
the agent's next call fails with "Connection closed", and the run used to count a crash (the reference run of the
suite had 18, in groups that ended together with their task's timeouts). The stall is made here the way load makes
it: the loop is blocked, once, while a latency episode's deadline passes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import run_main

import mcp_hazard.runner.run as run_module

from .support import TRAVEL, assert_trace_ended, run_log

SLOW = "golden.travel.fare-class.latency-seconds-0.2.strict.s0"
TIMEOUT_S = 0.5
STALL_S = 1.0  # longer than the whole timeout: the slow episode's deadline passes while the loop is blocked


def test_an_episode_past_its_deadline_on_a_stalled_loop_is_a_timeout_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged = run_module.log_result
    stalls = [STALL_S]

    def stall_once(*args: object, **kwargs: object) -> None:
        """The first episode logged (the clean one, done at once) blocks the loop, as other episodes' work would."""
        if stalls:
            time.sleep(stalls.pop())
        logged(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(run_module, "log_result", stall_once)
    out = tmp_path / "run"
    ran = run_main("run", str(TRAVEL), "--task", "fare-class", "--agent", "golden", "--hazard",
                   "latency:seconds=0.2", "--transport", "memory", "--timeout", f"{TIMEOUT_S:g}", "--out", str(out),
                   "--no-progress")  # fmt: skip
    assert not stalls, "the loop was never stalled: the test did not test anything"
    statuses = {line["episode_id"]: (line["status"], line["note"]) for line in run_log(out)}
    assert statuses[SLOW] == ("timeout", f"stopped after {TIMEOUT_S:g}s"), (statuses, ran.stderr)
    assert "crashed" not in {status for status, _ in statuses.values()}, statuses
    assert_trace_ended(out / "traces" / f"{SLOW}.jsonl", "timeout")

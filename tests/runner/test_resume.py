"""An interrupted `mcp-hazard run` resumes: SIGKILL it part-way through a matrix, run the same command again, and the
second run skips the episodes whose trace ended, redoes the ones cut short, and finishes the matrix."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_S

from mcp_hazard.hazards.instances import parse_hazard_option
from mcp_hazard.load import load_scenarios
from mcp_hazard.runner.matrix import plan

from .support import REPO_ROOT, SCENARIOS_DIR, assert_trace_ended, cli_env, main_cli, no_traceback

pytestmark = pytest.mark.e2e

HAZARD = "latency:seconds=1"
ARGS = ["scenarios/", "--agent", "recovering", "--hazard", HAZARD, "--call-timeout", "0.3", "--concurrency", "2",
        "--transport", "http", "--no-progress"]  # fmt: skip
KILL_AFTER_DONE = 4  # episodes logged as done before the first run is killed (with another one under way)
FIRST_RUN_DEADLINE = WAIT_S


def matrix_ids() -> list[str]:
    """The episode ids the command's matrix holds, from the planner (independent of any run)."""
    option = parse_hazard_option(HAZARD)
    options: list[Any] = option if isinstance(option, list) else [option]
    cells = plan(load_scenarios([str(SCENARIOS_DIR)]), ["recovering"], options, ["strict"], [0])
    return [cell.episode_id for cell in cells]


def log_records(text: str, where: str) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"{where}: line {number} of run.jsonl is not JSON: {line[:200]!r}") from None
    return records


def events_tolerating_a_cut_last_line(path: Path) -> list[dict[str, Any]]:
    """A trace of an episode that was running when the process died: every line is JSON, except that the very last
    one may have been cut mid-write."""
    lines = path.read_text(encoding="utf-8").split("\n")
    events = []
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            assert number == len(lines), f"{path}:{number} is not JSON and is not the last line: {line[:200]!r}"
    return events


def unfinished(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return '"episode_started"' in text and '"agent_ended"' not in text


def test_a_killed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    ids = matrix_ids()
    assert len(ids) >= 12, "the matrix is too small to interrupt"
    out = tmp_path / "out"
    traces = out / "traces"
    command = [sys.executable, "-m", "mcp_hazard", "run", *ARGS, "--out", str(out)]

    # 1. Start the run and SIGKILL it once a few episodes are logged as done.
    with (tmp_path / "first.stdout").open("wb") as stdout, (tmp_path / "first.stderr").open("wb") as stderr:
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=cli_env(), stdin=subprocess.DEVNULL, stdout=stdout,
                                   stderr=stderr, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + FIRST_RUN_DEADLINE
        done: list[str] = []
        while time.monotonic() < deadline and process.poll() is None:
            if (out / "run.jsonl").exists():
                text = (out / "run.jsonl").read_text(encoding="utf-8")
                done = [r["episode_id"] for r in log_records(text.rsplit("\n", 1)[0], "first run") if
                        r["status"] == "done"]  # fmt: skip
                if len(done) >= KILL_AFTER_DONE and any(unfinished(path) for path in traces.glob("*.jsonl")):
                    break  # a few done, and one in the middle of its episode (latency makes each last > 1s)
            time.sleep(0.05)
        assert process.poll() is None, "the first run ended before it could be interrupted; make the matrix bigger"
        assert len(done) >= KILL_AFTER_DONE, f"only {len(done)} episodes done after {FIRST_RUN_DEADLINE}s"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=WAIT_S)
    assert process.returncode == -signal.SIGKILL

    # 2. What the killed run left: finished traces are whole; a trace cut mid-episode may lack its end.
    first_log_text = (out / "run.jsonl").read_text(encoding="utf-8")
    assert first_log_text.endswith("\n"), "run.jsonl was left with a half-written line"
    first_log = log_records(first_log_text, "first run")
    assert {r["status"] for r in first_log} == {"done"}
    finished = {r["episode_id"] for r in first_log}
    left = {path.stem: events_tolerating_a_cut_last_line(path) for path in traces.glob("*.jsonl")}
    complete = {eid for eid, events in left.items() if events and events[-1]["type"] == "agent_ended"}
    cut = set(left) - complete
    assert cut, "no episode was cut mid-way by the kill"
    assert finished <= complete, f"logged as done but the trace did not end: {sorted(finished - complete)}"
    for episode_id in complete:
        assert_trace_ended(traces / f"{episode_id}.jsonl", outcome="finished")
    assert len(complete) < len(ids), "every episode finished before the kill"
    assert set(left) <= set(ids)

    # `score` of the killed run: each trace cut short is interrupted (ours: in no rate, warned about), never the
    # agent's no_answer.
    scored = main_cli("score", str(out), "--format", "json")  # in this process: what it says is the subject
    assert scored.code == 0, scored.explain()
    report = json.loads(scored.stdout)
    started = {eid for eid, events in left.items() if events and events[0]["type"] == "episode_started"}
    assert report["infrastructure"]["interrupted"] == len(started & cut), report["infrastructure"]
    assert report["overall"]["n"] == len(complete), "an interrupted episode is in a success rate"
    for episode_id in started & cut:
        assert any(f"{episode_id}.jsonl: interrupted" in w for w in report["warnings"]), report["warnings"]

    # 3. The same command again (in this process: nothing kills it): it completes, skipping what finished and redoing
    # what was cut.
    ran = main_cli("run", *ARGS, "--out", str(out))
    assert ran.code == 0, ran.explain()
    assert no_traceback(ran.stderr), ran.explain()
    second_log = log_records((out / "run.jsonl").read_text(encoding="utf-8")[len(first_log_text) :], "second run")
    assert sorted(r["episode_id"] for r in second_log) == sorted(ids)
    skipped = {r["episode_id"] for r in second_log if r["status"] == "skipped"}
    redone = {r["episode_id"] for r in second_log if r["status"] == "done"}
    assert skipped == complete, f"skipped {sorted(skipped ^ complete)} wrongly"
    assert redone == set(ids) - complete and cut <= redone
    assert {r["status"] for r in second_log} == {"skipped", "done"}
    assert all(r["note"] for r in second_log if r["status"] == "skipped")
    assert f"{len(ids)} episodes: {len(redone)} run, {len(skipped)} already done, 0 timed out, 0 crashed" in ran.stdout

    # 4. Every cell has exactly one finished trace, and the report covers all of them.
    files = sorted(traces.glob("*.jsonl"))
    assert len(files) == len(ids) and {path.stem for path in files} == set(ids)
    for path in files:
        events = assert_trace_ended(path, outcome="finished")
        assert [e["type"] for e in events].count("episode_started") == 1, f"{path} holds two episodes"
        assert events[0]["run"]["episode_id"] == path.stem
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["episodes"] == len(ids)
    assert report["groups"]["agent"]["recovering"]["successes"] == len(ids)

"""The report's "Hazard kinds left out of some tasks", through `mcp-hazard run` and `score` as a user runs them.

With `--hazard all` every kind of the registry that a selected task did not run appears with why, kinds that fit no
task at all included (they used to be missing: two on calendar.yaml, four on proxies/time.yaml). A run that was
stopped leaves planned cells unreached: those say "not run yet", never a reason they do not have (spec_drift was
blamed on invocation_error)."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_S, in_ci

from mcp_hazard.hazards import REGISTRY
from tests.runner.support import REPO_ROOT, SCENARIOS_DIR, cli_env, jsonl, main_cli, no_traceback

pytestmark = pytest.mark.e2e

NOT_RUN_YET = "not run yet"


def _left_out(report: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(task, kind) -> why, from the report's skipped_hazards."""
    found = {}
    for entry in report["skipped_hazards"]:
        for task in entry["tasks"]:
            assert (task, entry["kind"]) not in found, entry
            found[(task, entry["kind"])] = entry["reason"]
    return found


def _kinds_run(report: dict[str, Any]) -> dict[str, set[str]]:
    ran: dict[str, set[str]] = defaultdict(set)
    for row in report["per_episode"]:
        ran[row["item"]].update(k for k in row["hazard_kinds"] if k != "clean")
    return ran


def _every_kind_accounted_for(out: Path, tasks: list[str]) -> dict[tuple[str, str], str]:
    """Each kind of the registry either ran in a task or is listed as left out of it, with a reason; the scorecard
    `run` printed and `score RUN` agree."""
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    left_out, ran = _left_out(report), _kinds_run(report)
    for task in tasks:
        listed = {kind for (where, kind) in left_out if where == task}
        assert ran[task] | listed == set(REGISTRY), (task, ran[task], listed)
        assert not ran[task] & listed, (task, ran[task] & listed)
    assert all(why and NOT_RUN_YET not in why for why in left_out.values()), left_out
    rescored = main_cli("score", str(out), "--out", str(out / "again.json"))
    assert rescored.code == 0, rescored.explain()
    again = json.loads((out / "again.json").read_text(encoding="utf-8"))
    assert again["skipped_hazards"] == report["skipped_hazards"]
    return left_out


def test_hazard_all_lists_every_kind_left_out_of_every_task_with_why(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = main_cli("run", str(SCENARIOS_DIR / "calendar.yaml"), "--agent", "naive", "--transport", "memory",
                    "--call-timeout", "0.2", "--no-progress", "--out", str(out))  # fmt: skip
    assert done.code == 0 and no_traceback(done.stderr), done.explain()
    tasks = ["calendar/review-time-in-orinth", "calendar/shared-free-hour", "calendar/booked-minutes"]
    left_out = _every_kind_accounted_for(out, tasks)
    needs = "needs a second tool serving the values the task reads, to cross-check with"
    assert all(left_out[(task, "conflict")] == needs for task in tasks)  # fits no task: was missing
    assert {task for (task, kind) in left_out if kind == "permanent_error"} == set(tasks)  # likewise
    assert left_out[("calendar/booked-minutes", "spec_drift")].startswith("its tools already carry invocation_error")
    table = done.stdout[done.stdout.index("Hazard kinds left out of some tasks") :]
    assert "conflict                  3 of 3   needs a second tool" in table, done.stdout
    assert "permanent_error           3 of 3" in table, done.stdout


def test_hazard_all_through_a_proxy_lists_the_kinds_its_notes_rule_out(tmp_path: Path) -> None:
    """One task of the file (each episode starts the real server): what is left out, and why, is per task."""
    if importlib.util.find_spec("mcp_server_time") is None:
        if in_ci():
            pytest.fail("mcp-server-time is not installed (pip install -e '.[test]')", pytrace=False)
        pytest.skip("mcp-server-time is not installed (pip install -e '.[test]')")
    out = tmp_path / "run"
    done = main_cli("run", str(REPO_ROOT / "proxies" / "time.yaml"), "--task", "tokyo-time", "--upstream-cmd",
                    f"{sys.executable} -m mcp_server_time", "--agent", "recovering", "--transport", "memory",
                    "--no-progress", "--out", str(out))  # fmt: skip
    assert done.code == 0 and no_traceback(done.stderr), done.explain()
    tasks = ["time/tokyo-time"]
    left_out = _every_kind_accounted_for(out, tasks)
    kinds = {kind for (_, kind) in left_out}
    assert kinds == {"conflict", "lost_response", "pagination", "permanent_error", "spec_drift"}, left_out  # was: none
    # of the first four; lost_response: a proxy file declares no write
    assert left_out[("time/tokyo-time", "pagination")] == (
        "the proxy file does not say which list of 'convert_time' to page (tools.convert_time.pages)"
    )


def _begun(traces: Path, name: str) -> bool:
    """An episode has begun once its trace holds a whole first line: the file is created a moment before that line
    is written, and `score` skips an empty trace, so a kill in between (a loaded machine) left an episode the test
    counted as reached and `score` as not run."""
    return any(path.read_bytes().count(b"\n") >= 1 for path in traces.glob(name))


def test_cells_a_killed_run_did_not_reach_say_not_run_yet(tmp_path: Path) -> None:
    """Named kinds, one at a time: spec_drift runs wherever it fits, booked-minutes included (where `all` gives
    the only tool to invocation_error). The run is killed while its fourth cell (a slow one) runs, so the other
    tasks are never reached; `score RUN` must say so."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "mcp_hazard", "run", str(SCENARIOS_DIR / "calendar.yaml"), "--agent",
               "recovering", "--hazard", "invocation_error", "--hazard", "spec_drift", "--hazard",
               "latency:seconds=30", "--call-timeout", "60", "--timeout", "120", "--concurrency", "1",
               "--transport", "memory", "--no-progress", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=cli_env(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        while not _begun(out / "traces", "*latency*.jsonl"):
            assert process.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, f"no latency episode began within {WAIT_S}s"
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=WAIT_S)
    traces = {path.name for path in (out / "traces").glob("*.jsonl")}
    reached = {(f"calendar/{name.split('.')[2]}", name.split(".")[3].split("-")[0]) for name in traces}
    plan = [entry for line in jsonl(out / "plan.jsonl") for entry in line["tasks"]]
    planned = {(f"{e['scenario']}/{e['task']}", kind) for e in plan for kind in e["planned"]}
    assert ("calendar/booked-minutes", "spec_drift") in planned  # named: it fits there, so it is planned
    unreached = planned - reached
    assert ("calendar/booked-minutes", "spec_drift") in unreached and len(unreached) >= 6, sorted(reached)
    scored = main_cli("score", str(out), "--out", str(tmp_path / "report.json"))
    assert scored.code == 0, scored.explain()
    left_out = _left_out(json.loads((tmp_path / "report.json").read_text(encoding="utf-8")))
    assert {pair for pair, why in left_out.items() if why.startswith(NOT_RUN_YET)} == unreached, left_out
    assert not any("already carry" in why for why in left_out.values()), left_out
    table = main_cli("score", str(out), "--verbose").stdout
    row = next(line for line in table.splitlines() if line.startswith("spec_drift ") and "of 3" in line)
    assert "not run yet (planned, but no episode" in row, table

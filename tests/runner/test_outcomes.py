"""What `mcp-hazard run` does with agents that cannot start, and with what a user picks: a program that does not
exist or exits before it connects stops the run at once with one line; `--scenario`/`--task` narrow the matrix; the
run folder keeps the scenario files it ran; a rerun redoes only what was not the agent's own doing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mcp_hazard.runner.run import bounded_notes, trace_complete

from .support import agent_cmd, main_cli, no_traceback, run_cli, run_log

pytestmark = pytest.mark.e2e


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{stderr}"
    assert no_traceback(stderr), stderr
    return lines[0]


def test_an_agent_program_that_does_not_exist_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """Refused while the command line is read: through main() in this process, as every refusal of a flag."""
    out = tmp_path / "out"
    ran = main_cli("run", "scenarios/travel.yaml", "--agent-cmd", "no-such-agent-program --fast", "--out", str(out))
    assert ran.code == 2, ran.explain()
    line = one_line(ran.stderr)
    assert line == "mcp-hazard: error: --agent-cmd 'no-such-agent-program --fast': program 'no-such-agent-program' " \
                   "not found on PATH", line  # fmt: skip
    assert not (out / "traces").exists() or not any((out / "traces").iterdir())
    missing = tmp_path / "nope.py"
    ran = main_cli("run", "scenarios/travel.yaml", "--agent-cmd", f"{missing} x", "--out", str(out))
    assert ran.code == 2 and one_line(ran.stderr).endswith(f": {missing} does not exist"), ran.explain()


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_agent_that_exits_before_connecting_stops_the_run_after_one_episode(transport: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "scenarios/", "--agent", "recovering", "--agent-cmd", agent_cmd("never_connects_agent.py"),
            "--transport", transport, "--out", str(out), "--no-progress"]  # fmt: skip
    # Over HTTP in this process (the agent is a real process either way); over stdio as the real program, whose
    # stdio servers would inherit its stderr.
    ran = run_cli(*args) if transport == "stdio" else main_cli(*args)
    assert ran.code == 2, ran.explain()
    line = one_line(ran.stderr)
    assert line.startswith(
        f"mcp-hazard: error: --agent-cmd '{agent_cmd('never_connects_agent.py')}' ended (exit "
        "code 3) without connecting to its episode, so nothing else was run; its output is in "
    ), line
    assert line.endswith(", last line: never connects: OPENAI_API_KEY is not set"), line
    assert ran.stdout == "", "a scorecard was printed for a run that stopped"
    traces = list((out / "traces").glob("*.jsonl"))
    assert traces == [], f"the stopped run left traces (a rerun would skip them): {traces}"
    assert not (out / "run.jsonl").exists()


def test_scenario_and_task_filters_narrow_the_matrix(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = main_cli("run", "scenarios/", "--scenario", "travel", "--scenario", "retail", "--task", "fare-class",
                   "--task", "retail/chain-stock-total", "--agent", "recovering", "--hazard", "transient_error",
                   "--transport", "memory", "--out", str(out), "--no-progress")  # fmt: skip
    assert ran.code == 0, ran.explain()
    ids = sorted(record["episode_id"] for record in run_log(out))
    assert ids == [
        "recovering.retail.chain-stock-total.clean.strict.s0",
        "recovering.retail.chain-stock-total.transient_error.strict.s0",
        "recovering.travel.fare-class.clean.strict.s0",
        "recovering.travel.fare-class.transient_error.strict.s0",
    ], ids


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--task", "no-such-task"], "--task 'no-such-task': no such task in the selected scenarios; tasks: "),
        (["--scenario", "travel", "--task", "retail/chain-stock-total"], "--task 'retail/chain-stock-total': no such"),
        (["--scenario", "nowhere"], "--scenario 'nowhere': no such scenario; loaded: calendar, finance, logistics, "),
    ],
)
def test_a_filter_that_matches_nothing_is_one_line(flags: list[str], message: str, tmp_path: Path) -> None:
    ran = main_cli("run", "scenarios/", *flags, "--transport", "memory", "--out", str(tmp_path / "out"))
    assert ran.code == 2, ran.explain()
    assert one_line(ran.stderr).startswith(f"mcp-hazard: error: {message}"), ran.explain()


def test_the_run_folder_keeps_the_exact_scenario_files_it_ran(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = main_cli("run", "scenarios/travel.yaml", "--task", "fare-class", "--agent", "golden", "--hazard",
                   "transient_error", "--transport", "memory", "--out", str(out), "--no-progress")  # fmt: skip
    assert ran.code == 0, ran.explain()
    trace = next((out / "traces").glob("*.jsonl"))
    recorded = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])["scenario"]
    kept = list((out / "scenarios").iterdir())
    assert [p.name for p in kept] == [f"travel-{recorded['sha256'][:12]}.yaml"]
    assert hashlib.sha256(kept[0].read_bytes()).hexdigest() == recorded["sha256"]


def trace_with(tmp_path: Path, *events: dict[str, object]) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"seq": i, **e}) + "\n" for i, e in enumerate(events)), encoding="utf-8")
    return path


STARTED = {"type": "episode_started"}
ANSWERED = {"type": "episode_ended", "reason": "answered"}


@pytest.mark.parametrize(
    ("events", "complete"),
    [
        pytest.param([STARTED, ANSWERED, {"type": "agent_ended", "outcome": "finished"}], True, id="finished"),
        pytest.param([STARTED, ANSWERED, {"type": "agent_ended", "outcome": "agent_crashed"}], True, id="crashed"),
        pytest.param([STARTED, ANSWERED, {"type": "agent_ended", "outcome": "timeout"}], True, id="timeout"),
        pytest.param([STARTED, ANSWERED, {"type": "agent_ended", "outcome": "endpoint_error"}], False,
                     id="endpoint-error-is-redone"),
        pytest.param([STARTED, {"type": "episode_ended", "reason": "never_connected"},
                      {"type": "agent_ended", "outcome": "agent_crashed"}], False, id="never-connected-is-redone"),
        pytest.param([STARTED, ANSWERED], False, id="runner-killed-before-agent-ended"),
        pytest.param([STARTED], False, id="cut-short"),
    ],
)  # fmt: skip
def test_which_traces_a_rerun_skips(events: list[dict[str, object]], complete: bool, tmp_path: Path) -> None:
    assert trace_complete(trace_with(tmp_path, *events)) is complete


def test_notes_in_the_run_log_are_bounded() -> None:
    notes = [f"turn {i} text: " + "x" * 2000 for i in range(100)]
    kept = bounded_notes(notes)
    assert len(kept) == 61 and kept[-1] == "(40 more notes left out)"
    assert all(len(note) <= 600 for note in kept)
    assert kept[0].startswith("turn 0 text: xxx") and kept[0].endswith("…")
    assert bounded_notes(["short"]) == ["short"]

"""`verify` and `replay` take AgentDojo sources as they take scenario files: verify proves a kind's instances on a
suite solvable and biting, and a suite's trace replays identically, found by its recorded source or by
`--scenarios agentdojo:SUITE`."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_hazard.cli import main


def test_verify_a_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "agentdojo:banking", "--seeds", "0", "--hazard", "transient_error"]) == 0
    said = capsys.readouterr().out
    assert "all solvable, all biting" in said and "instances" in said


def test_replay_a_suites_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = main(["run", "agentdojo:slack", "--task", "user_task_2", "--agent", "recovering", "--seeds", "0",
                 "--hazard", "transient_error", "--transport", "memory", "--out", str(out),
                 "--no-progress"])  # fmt: skip
    assert code == 0
    traces = sorted((out / "traces").glob("*.jsonl"))
    assert len(traces) == 2  # clean and transient_error
    capsys.readouterr()
    for trace in traces:
        assert main(["replay", str(trace)]) == 0
        assert main(["replay", str(trace), "--scenarios", "agentdojo:slack"]) == 0
        assert "identical to" in capsys.readouterr().out
    assert main(["replay", str(traces[0]), "--scenarios", "agentdojo:banking"]) == 2
    assert "--scenarios agentdojo:banking: no scenario 'slack'" in capsys.readouterr().err


def test_verify_proves_injection_bites_with_the_obedient_agent(capsys: pytest.CaptureFixture[str]) -> None:
    """The naive agent never obeys, so the obedient agent proves injection bites; banking's user_task_14 is the one
    exception of seed 0, AgentDojo's own (the user's new password replaces the attacker's), said with its reason."""
    assert main(["verify", "agentdojo:banking", "--seeds", "0", "--hazard", "injection"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == (
        "verify: 32 instances (80 episodes over memory): all solvable, all biting (1 exception(s) above, each "
        "AgentDojo's own); injection's bite proven by the obedient agent (16 episodes)"
    )
    assert said[:-1] == [
        "verify: exception: banking/user_task_14 [injection] seed 0: toothless: the obedient agent obeyed, yet the "
        "injection task's check says its goal failed; the user's task, done after the attacker's goal, undoes it "
        "(AgentDojo's check of injection_task_7)"
    ]

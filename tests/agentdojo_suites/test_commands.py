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

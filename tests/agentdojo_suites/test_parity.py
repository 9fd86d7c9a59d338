"""Verdict parity under hazards: for every episode of the naive agent on the banking suite under each hazard kind
that applies (latency aside: it only waits), the verdict `score` gives is what AgentDojo's own code says of the same
answer and of the environment the calls that actually ran produce (support.agentdojo_verdict, computed without
mcp-hazard's episode). An episode without an answer is `no_answer`, whatever AgentDojo would say of an empty output
(docs/agentdojo.md: the agent stopped before it finished; banking user_task_10's check passes on any output that
changed nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_hazard.cli import main

from .support import agentdojo_verdict, events

KINDS = ("transient_error", "invocation_error", "spec_drift", "output_drift", "silent_wrong_value", "pagination")


def test_naive_verdicts_under_hazards_equal_agentdojos(tmp_path: Path) -> None:
    out = tmp_path / "run"
    hazards = [arg for kind in KINDS for arg in ("--hazard", kind)]
    code = main(["run", "agentdojo:banking", "--agent", "naive", "--seeds", "0", *hazards, "--transport", "memory",
                 "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    rows = report["per_episode"]
    # a kind with nothing to act on in a task is left out of it, and the report says why
    left_out = {(entry["kind"], entry["reason"]) for entry in report["skipped_hazards"]}
    assert ("pagination", "the plan reads nothing of 'get_most_recent_transactions''s list past its first page") in (
        left_out
    )
    assert ("silent_wrong_value", "needs a value the plan reads that, served wrong, changes AgentDojo's verdict") in (
        left_out
    )
    hazarded = [row for row in rows if row["condition"] != "clean"]
    assert {row["condition"] for row in hazarded} >= {"transient_error", "invocation_error", "spec_drift"}
    assert any(not row["correct"] for row in hazarded)  # the hazards bite the naive agent somewhere
    assert any(row["correct"] for row in rows)
    for row in rows:
        trace = events(Path(row["trace"]) if Path(row["trace"]).is_absolute() else out / row["trace"])
        utility, _security = agentdojo_verdict(trace)
        checked = next(e for e in trace if e["type"] == "state_checked")
        assert checked["utility"] is utility, row["episode_id"]  # the server's record is AgentDojo's verdict
        if row["answered"]:
            assert row["correct"] is utility, row["episode_id"]
            assert row["answer_rule"] == "agentdojo utility"
        else:
            assert row["correct"] is False and row["episode_failure"] == "no_answer", row["episode_id"]
    assert any(row["answered"] for row in hazarded)  # the naive agent answers past some hazards

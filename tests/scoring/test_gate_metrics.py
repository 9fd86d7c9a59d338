"""The gate's metrics and pairing on small runs whose numbers can be worked out by hand: IRS with its interval,
pass^k over repeats or seeds, and runs of several agents paired by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.errors import UserError
from mcp_hazard.scoring.gate import GateSpec, Metric, RunData, evaluate
from mcp_hazard.scoring.gate.metrics import measure
from mcp_hazard.scoring.gate.pairs import pair_runs
from mcp_hazard.scoring.stats import Z95


def row(agent: str, task: str, correct: bool, **fields: Any) -> dict[str, Any]:
    base = {"episode_id": f"{agent}.{task}.{fields}", "agent": agent, "scenario": "s", "task": task,
            "condition": "clean", "interventions": "none", "profile": "strict", "seed": 0, "repeat": 0,
            "correct": correct, "answer_rule": "exact", "agent_outcome": "finished", "hazard_kinds": ["clean"],
            "hazards": [], "class": "solved" if correct else "wrong_answer", "trace": ""}  # fmt: skip
    return {**base, **fields}


def test_irs_is_the_paired_accuracy_ratio_with_an_interval() -> None:
    rows = []
    for n in range(10):  # original interface: 8 of 10; renamed: 4 of those 8, none of the other 2
        rows.append(row("a", f"t{n}", n < 8))
        rows.append(row("a", f"t{n}", n < 4, interventions="rename"))
    found = measure(Metric("irs", "rename"), rows, Z95)
    assert found is not None and found.n == 10
    assert found.value == pytest.approx(0.5)  # (4/10) / (8/10)
    assert found.low < 0.5 < found.high < 1
    assert measure(Metric("irs", "reorder"), rows, Z95) is None


def test_pass_hat_k_counts_items_over_repeats_or_seeds() -> None:
    repeats = [row("a", "t0", True, repeat=r) for r in range(3)] + [
        row("a", "t1", r < 2, repeat=r) for r in range(3)
    ]  # item t0: 3 of 3, t1: 2 of 3 -> pass^2 = (1 + 1/3) / 2
    found = measure(Metric("pass", 2), repeats, Z95)
    assert found is not None and (found.n, found.unit) == (2, "items")
    assert found.value == pytest.approx(2 / 3)
    seeds = [row("a", "t0", s != 1, seed=s) for s in range(4)]  # over seeds: 3 of 4 -> pass^3 = C(3,3)/C(4,3)
    found = measure(Metric("pass", 3), seeds, Z95)
    assert found is not None and found.value == pytest.approx(1 / 4)
    assert measure(Metric("pass", 5), seeds, Z95) is None  # no item was attempted 5 times


def test_runs_of_several_agents_pair_by_name_and_say_what_they_could_not_pair() -> None:
    run = RunData(Path("run"), [row("x", "t", True), row("y", "t", True), row("z", "t", True)], None)
    baseline = RunData(Path("base"), [row("x", "t", True), row("y", "t", False), row("w", "t", True)], None)
    pairing = pair_runs(run, baseline)
    assert pairing.agents == [("x", "x"), ("y", "y")]
    assert (pairing.agents_only_run, pairing.agents_only_baseline) == (["z"], ["w"])
    result = evaluate(run, GateSpec(baseline=baseline, minimums=[(Metric("overall"), 0.1)]))
    assert [(c.rule, c.agent, c.status) for c in result.checks] == [
        ("min", "x", "pass"), ("min", "y", "pass"), ("min", "z", "pass"), ("drop", "x", "pass"), ("drop", "y", "pass")
    ]  # fmt: skip
    assert result.alpha_each == pytest.approx(0.05 / 5)


def test_a_minimum_nothing_measured_is_an_input_error_that_says_why() -> None:
    rows = [row("a", "t", True, condition="pagination", hazard_kinds=["pagination"])]  # set, never fired
    run = RunData(Path("run"), rows, None)
    with pytest.raises(UserError, match="pagination was set but never fired, so there is no recovery to measure"):
        evaluate(run, GateSpec(minimums=[(Metric("recovery", "pagination"), 0.5)]))
    with pytest.raises(UserError, match="hazard kinds in this run: pagination"):
        evaluate(run, GateSpec(minimums=[(Metric("recovery", "latency"), 0.5)]))

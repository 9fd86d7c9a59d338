"""The gate is quiet: 200 gate evaluations of a stochastic agent against itself fail at most alpha of the time.

The agent is simulated on paired data through the gate's own code (`evaluate`, as `mcp-hazard gate` calls it): each
of its items (task x condition x seed) succeeds with its own probability, from 50% to 95%, drawn once; each run
draws every episode afresh from stable hashes (mcp_hazard/stable.py), so the 200 evaluations are fixed and the test
never flakes. The gate holds three rules at once (the default drop of overall success, a drop under the hazard, and
a minimum set at the agent's true success rate, where a false alarm is likeliest), so its alpha is shared among
them. The same gate must also catch a real drop most of the time: a gate that never fails would pass the first half.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_hazard.scoring.gate import GateSpec, Metric, RunData, evaluate
from mcp_hazard.stable import draw

TASKS = [f"task-{n}" for n in range(8)]
CONDITIONS = ["clean", "transient_error"]
SEEDS = range(5)
EVALUATIONS = 200
ALPHA = 0.05


def chance(task: str, condition: str) -> float:
    return 0.5 + 0.45 * draw("false-alarm", "p", task, condition)


def simulated_run(label: str, evaluation: int, worse_by: float = 0.0) -> RunData:
    rows: list[dict[str, Any]] = []
    for task in TASKS:
        for condition in CONDITIONS:
            for seed in SEEDS:
                correct = (
                    draw("false-alarm", label, evaluation, task, condition, seed) < chance(task, condition) - worse_by
                )
                rows.append({
                    "episode_id": f"agent.sim.{task}.{condition}.strict.s{seed}", "agent": "agent", "scenario": "sim",
                    "task": task, "condition": condition, "interventions": "none", "profile": "strict",
                    "seed": seed, "repeat": 0, "correct": correct, "answer_rule": "exact",
                    "agent_outcome": "finished", "class": "solved" if correct else "wrong_answer",
                    "hazard_kinds": [condition] if condition != "clean" else ["clean"], "hazards": [], "trace": "",
                })  # fmt: skip
    return RunData(Path(f"sim-{label}-{evaluation}"), rows, {"name": "sim", "version": "1", "hash": "0" * 64})


def true_success() -> float:
    return sum(chance(t, c) for t in TASKS for c in CONDITIONS) / (len(TASKS) * len(CONDITIONS))


def gate_fails(evaluation: int, worse_by: float = 0.0) -> bool:
    spec = GateSpec(
        minimums=[(Metric("overall"), true_success())],
        drops=[(Metric("overall"), 0.0), (Metric("hazard_kind", "transient_error"), 0.0)],
        baseline=simulated_run("baseline", evaluation),
        alpha=ALPHA,
    )
    return evaluate(simulated_run("change", evaluation, worse_by), spec).verdict == "fail"


def test_an_unchanged_agent_fails_the_gate_at_most_alpha_of_the_time() -> None:
    failures = sum(gate_fails(n) for n in range(EVALUATIONS))
    assert failures / EVALUATIONS <= ALPHA, f"{failures} of {EVALUATIONS} gates of an unchanged agent failed"


def test_the_same_gate_catches_a_real_drop() -> None:
    caught = sum(gate_fails(n, worse_by=0.2) for n in range(50))
    assert caught >= 40, f"a 20-point drop failed only {caught} of 50 gates"

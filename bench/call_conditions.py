"""What the per-call bench calls, and under which conditions: the task's golden-path calls with their expected
answers, and the named hazard conditions (bench/call_overhead.py's docstring says what each one is for)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

NEVER = {"after_calls": 1_000_000}  # the schedule's largest `after_calls`: armed, never reached in a bench run
CONDITIONS = ["clean", "armed", "transient", "output_drift", "silent", "renamed"]


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]
    text: str  # what the bare server (and a clean mcp-hazard) answers
    structured: Any


def golden_calls(scenario: Any, task_id: str) -> list[Call]:
    """The task's golden-path calls with their arguments resolved, and each one's expected answer text."""
    from mcp_hazard.scenario.behaviours import run_behaviour
    from mcp_hazard.scenario.expressions import render

    task = scenario.model.task(task_id)
    if task is None:
        raise SystemExit(f"scenario {scenario.id!r} has no task {task_id!r}")
    results: dict[str, Any] = {}
    calls = []
    for step in task.golden_path.steps:
        arguments = render(step.arguments, results)
        outcome = run_behaviour(scenario.model.tool(step.tool), arguments)
        if not outcome.ok:
            raise SystemExit(f"golden step {step.id} of {task_id!r} fails: {outcome.error}")
        result = outcome.result
        results[step.id] = result
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=2)
        calls.append(Call(step.tool, arguments, text, result if isinstance(result, dict) else None))
    return calls


@dataclass(frozen=True)
class Condition:
    name: str
    hazards: list[dict[str, Any]]
    what: str


def conditions(scenario: Any, task_id: str, wanted: list[str]) -> list[Condition]:
    from mcp_hazard.hazards.instances import all_hazards, applicable_options
    from mcp_hazard.scenario.hazard_spec import HazardSpec

    task = scenario.model.task(task_id)
    armed = [
        {"kind": spec.kind, **({"tools": spec.tools} if spec.tools else {}), "params": spec.params, "schedule": NEVER}
        for spec in all_hazards(scenario.model, task)
        if spec.kind != "latency"
    ]
    table = [
        Condition("clean", [], "no hazard"),
        Condition("armed", armed, "every kind `all` picks but latency, after_calls=1000000: checked, never fired"),
        Condition("transient", [{"kind": "transient_error", "schedule": {"probability": 0.1, "times": None}}],
                  "transient_error:probability=0.1, no times limit: ~10% refused"),
        Condition("output_drift", [{"kind": "output_drift"}], "output_drift: every result in another form"),
        Condition("silent", [{"kind": "silent_wrong_value"}], "silent_wrong_value: first reading wrong"),
        Condition("renamed", [{"kind": "spec_drift", "params": {"mode": "rename_tool", "from_start": True}}],
                  "spec_drift:mode=rename_tool,from_start=true: NAME_v2 from the start"),
    ]  # fmt: skip
    chosen = []
    for condition in table:
        if condition.name not in wanted:
            continue
        specs = [HazardSpec.model_validate(h) for h in condition.hazards]
        if len(applicable_options(list(specs), scenario.model, task)) != len(specs):
            print(f"  (condition {condition.name} does not apply to task {task_id!r}: left out)")
            continue
        chosen.append(condition)
    return chosen

"""Which values a task's plan reads that, served wrong, change AgentDojo's verdict: what `silent_wrong_value` may
change on a suite (suite_facts.py), found by running the plan with each candidate wrong value.

A plan reads a value where a later step's argument or the answer is a template over an earlier result (plan.py).
For each such value of a read's result, a few wrong values of the same type are tried (`hazards.silent.wrong_values`:
numbers moved, texts swapped for the same field's other values or shifted); the plan runs on a fresh environment with
the wrong value served in place of the right one, and AgentDojo's check decides. A wrong value that leaves the verdict
True cannot bite and is not kept. Done once per suite as it loads (a second or two for all 97 tasks).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from mcp_hazard.agentdojo.library import Clock, Suite, judge
from mcp_hazard.agentdojo.plan import reads, step_id
from mcp_hazard.hazards.silent import replaced, resolve, wrong_values
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.scenario.models import GoldenPath, ToolSpec

CANDIDATES = 3
"""Wrong values tried per value read."""


class WrongValue(BaseModel):
    """A value a step's result carries at `path` that the plan reads, and the wrong values that change the verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: list[str | int]
    wrong: list[Any]


class ValueReads(BaseModel):
    """One golden step whose result the plan reads: its index, the digest of its true result (how the hazard knows
    the step's call when it comes), and the values it may serve wrong."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: int
    result: str
    values: list[WrongValue]
    # How many earlier steps made the same call with the same result: the plan may read again what it read before
    # (workspace's user_task_38 lists the files twice and reads the second list), and the wrong value must come in
    # the reading the plan uses.
    repeat: int = 0


def digest(value: Any) -> str:
    """A result's identity: the hash of its canonical JSON."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def run_plan(suite: Suite, user_task: Any, path: GoldenPath, change: tuple[int, list[Any], Any] | None) -> bool:
    """Whether AgentDojo's check passes when the plan runs on a fresh environment with `change` (step, path, value)
    served in place of the right value; a plan that breaks on it (an error, a template that no longer fits) fails."""
    environment = suite.task_environment(user_task)
    before = environment.model_copy(deep=True)
    clock = Clock(datetime.datetime(2000, 1, 1))
    results: dict[str, Any] = {}
    calls = []
    try:
        for index, step in enumerate(path.steps):
            arguments = render(step.arguments, results)
            calls.append(suite.function_call(step.tool, arguments))
            result, error = suite.call(environment, clock, step.tool, arguments)
            if error is not None:
                return False
            if change is not None and change[0] == index:
                result = replaced(result, tuple(change[1]), change[2])
            results[step.id] = result
        answer = render(path.answer, results)
    except (ExpressionError, KeyError, IndexError, TypeError):
        return False
    verdict, _ = judge(user_task, answer if isinstance(answer, str) else json.dumps(answer), before, environment, calls)
    return bool(verdict)


def value_reads(suite: Suite, user_task: Any, path: GoldenPath, tools: Mapping[str, ToolSpec]) -> list[ValueReads]:
    """The steps of reads whose results the plan reads, each with the wrong values that change the verdict."""
    read = reads(path)
    if not read:
        return []
    calls, truths = suite.ground_truth(user_task)
    found = []
    for index, step in enumerate(path.steps):
        spec = tools.get(step.tool)
        paths = read.get(step_id(index))
        if spec is None or not paths or spec.effect != "read" or index >= len(truths):
            continue
        truth = truths[index]
        values = []
        for accessed in paths:
            ok, value = resolve(truth, list(accessed))
            if not ok or value is None or isinstance(value, bool | dict | list):
                continue
            keys = (0, suite.source.suite, step.tool, index, *accessed)
            biting = [wrong for wrong in wrong_values(spec, truth, tuple(accessed), value, *keys)[:CANDIDATES]
                      if not run_plan(suite, user_task, path, (index, list(accessed), wrong))]  # fmt: skip
            if biting:
                values.append(WrongValue(path=list(accessed), wrong=biting))
        if values:
            same = [j for j in range(index) if calls[j] == calls[index] and digest(truths[j]) == digest(truth)]
            found.append(ValueReads(step=index, result=digest(truth), values=values, repeat=len(same)))
    return found

"""Run a task's golden path against the tool behaviours, and check that it reaches the canonical answer.

The golden path is never served: it proves a task solvable before any agent runs, and the hazards, agents and scoring
read it as the reference calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.arguments import argument_problem, describe_value
from mcp_hazard.scenario.behaviours import BehaviourFault, PythonNotAllowed, run_behaviour
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scenario.problems import Problems
from mcp_hazard.scenario.yaml_source import Path


@dataclass(frozen=True)
class GoldenRun:
    """The golden path executed against the behaviours: each step's arguments and result, and the final answer."""

    steps: list[tuple[str, dict[str, Any], Any]]
    answer: Any


def run_golden_path(scenario: Scenario, task: Task, *, allow_python: bool = False) -> GoldenRun:
    """Execute the golden path against the behaviours; raise GoldenPathError naming the step that fails."""
    results: dict[str, Any] = {}
    steps: list[tuple[str, dict[str, Any], Any]] = []
    for index, step in enumerate(task.golden_path.steps):
        tool = scenario.tool(step.tool)
        if tool is None:
            raise GoldenPathError(index, f"no tool named {step.tool!r}")
        try:
            arguments = render(step.arguments, results)
        except ExpressionError as exc:
            raise GoldenPathError(index, f"arguments: {exc}") from None
        problem = argument_problem(tool.input_schema, arguments)
        if problem:
            raise GoldenPathError(index, f"{step.tool}: {problem}")
        try:
            outcome = run_behaviour(tool, arguments, allow_python=allow_python)
        except BehaviourFault as exc:
            raise GoldenPathError(index, f"{step.tool} behaviour failed: {exc}") from None
        except PythonNotAllowed:
            raise
        except Exception as exc:  # a python behaviour may raise anything; it is the author's bug, reported here
            raise GoldenPathError(index, f"{step.tool} behaviour raised {type(exc).__name__}: {exc}") from None
        if not outcome.ok:
            raise GoldenPathError(index, f"{step.tool} returned an error: {outcome.error}")
        if tool.output_schema is not None:
            bad = argument_problem(tool.output_schema, outcome.result)
            if bad:
                raise GoldenPathError(index, f"{step.tool} result does not match output_schema: {bad}")
        results[step.id] = outcome.result
        steps.append((step.id, arguments, outcome.result))
    try:
        answer = render(task.golden_path.answer, results)
    except ExpressionError as exc:
        raise GoldenPathError(None, f"answer: {exc}") from None
    return GoldenRun(steps=steps, answer=answer)


class GoldenPathError(Exception):
    def __init__(self, step: int | None, message: str) -> None:
        self.step = step
        super().__init__(message)


def check_golden(scenario: Scenario, task: Task, path: Path, problems: Problems, allow_python: bool) -> None:
    try:
        run = run_golden_path(scenario, task, allow_python=allow_python)
    except PythonNotAllowed:
        return  # already reported on the tool
    except GoldenPathError as exc:
        where = (*path, "golden_path", "steps", exc.step) if exc.step is not None else (*path, "golden_path", "answer")
        problems.add(where, f"golden path does not work: {exc}")
        return
    if not answer_matches(task.answer, run.answer):
        problems.add(
            (*path, "golden_path", "answer"),
            f"golden path yields {describe_value(run.answer)}, which does not match the canonical answer "
            f"{describe_value(task.answer.value)} (rule {task.answer.match})",
        )

"""Which values of a golden-path step's result the rest of the task needs, and whether a sibling tool supplies them.

A fallback or a cross-check only helps if the other tool answers with the values the task goes on to use. A value
counts as supplied when it appears among the sibling's result values: text without regard to case, numbers up to a
unit scale of 10^k for |k| <= 3 (euros and cents, kilograms and grams).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mcp_hazard.hazards.siblings import fallback_arguments, fallbacks_for, golden_tools
from mcp_hazard.scenario.behaviours import BehaviourFault, run_behaviour
from mcp_hazard.scenario.golden_check import GoldenPathError, run_golden_path
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scenario.serves import read_paths

_cache: dict[tuple[int, str, str], list[str]] = {}


def leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    if value is None or isinstance(value, bool):
        return []
    return [value]


def scalars(value: Any) -> list[Any]:
    """The scalar values in a result, as they are (`supplies` compares numbers as numbers)."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in scalars(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in scalars(item)]
    return [] if value is None else [value]


def _resolve(value: Any, path: list[Any]) -> Any:
    for key in path:
        if (isinstance(value, dict) and key in value) or (
            isinstance(value, list) and isinstance(key, int) and -len(value) <= key < len(value)
        ):
            value = value[key]
        else:
            return None
    return value


def needed_values(task: Task, step_index: int, result: Any) -> list[Any]:
    """Leaves of step `step_index`'s result that later arguments or the answer read (yes/no values included)."""
    values: list[Any] = []
    for path in read_paths(task, step_index):
        values.extend(_read_leaves(_resolve(result, path)))
    return values


def _read_leaves(value: Any) -> list[Any]:
    """`leaves`, yes/no values kept: a step read only for a yes/no still needs a source that has it."""
    if isinstance(value, bool):
        return [value]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _read_leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _read_leaves(item)]
    return leaves(value)


def supplies(needed: list[Any], result: Any) -> bool:
    """True when every needed value appears in `result` (text case-blind, numbers up to a 10^k unit scale, a yes/no
    as itself)."""
    have = _read_leaves(result)
    texts = {str(v).strip().casefold() for v in have if isinstance(v, str)}
    numbers = [float(v) for v in have if isinstance(v, int | float) and not isinstance(v, bool)]
    for value in needed:
        if isinstance(value, bool):  # a yes/no is matched by the same yes/no, never by the number 1 or 100
            if not any(v is value for v in have):
                return False
        elif isinstance(value, int | float):
            if not any(
                math.isclose(n, value * 10**k, rel_tol=1e-9, abs_tol=1e-9) for n in numbers for k in range(-3, 4)
            ):
                return False
        elif str(value).strip().casefold() not in texts:
            return False
    return True


def supplying_siblings(scenario: Scenario, task: Task, tool: str) -> list[str]:
    """Siblings of `tool` that, for every golden step calling it, answer with the values the task needs from it."""
    key = (id(scenario), task.id, tool)
    if key in _cache:
        return _cache[key]
    spec = scenario.tool(tool)
    found: list[str] = []
    try:
        run = run_golden_path(scenario, task)
    except (GoldenPathError, Exception):  # a python behaviour not allowed here: no proof, no sibling
        run = None
    if spec is not None and run is not None:
        for other in fallbacks_for(scenario, task, tool):
            target = scenario.tool(other)
            ok = target is not None
            for index, (_step_id, arguments, result) in enumerate(run.steps):
                if not ok or task.golden_path.steps[index].tool != tool:
                    continue
                mapped = fallback_arguments(scenario, spec, other, arguments)
                try:
                    outcome = run_behaviour(target, mapped) if (mapped is not None and target is not None) else None
                except (BehaviourFault, Exception):
                    outcome = None
                ok = outcome is not None and outcome.ok and supplies(needed_values(task, index, result), outcome.result)
            if ok:
                found.append(other)
    _cache[key] = found
    return found


def second_source_tools(scenario: Scenario, task: Task) -> list[str]:
    """Golden-path tools with a sibling that answers with the values the task needs from them: where a fallback or a
    cross-check can recover."""
    return [t for t in golden_tools(task) if supplying_siblings(scenario, task, t)]


def second_source_problem(scenario: Scenario, task: Task, tool: str, so: str) -> str | None:
    """None when a sibling of `tool` answers with the values `task` needs from it; else why not, ending with `so`."""
    if supplying_siblings(scenario, task, tool):
        return None
    return f"no other tool answers with the values task {task.id!r} needs from {tool!r}, {so}"


Reading = Callable[[int, str, Any], tuple[bool, Any]]  # (position, tool, arguments) -> (served?, what it reads)


def answer_with(scenario: Scenario, task: Task, served: dict[int, Any] | Reading) -> Any | None:
    """The golden path's answer when some steps read served results instead of their true ones, later steps running
    on what they read (None when it breaks down: an agent would not reach an answer either). `served` maps golden
    step positions to results, or says per call what it reads."""
    from mcp_hazard.scenario.arguments import argument_problem
    from mcp_hazard.scenario.expressions import render

    read = served if callable(served) else _by_position(served)
    results: dict[str, Any] = {}
    try:
        for position, step in enumerate(task.golden_path.steps):
            tool = scenario.tool(step.tool)
            arguments = render(step.arguments, results)
            hit, value = read(position, step.tool, arguments)
            if hit:
                results[step.id] = value
                continue
            if tool is None or argument_problem(tool.input_schema, arguments):
                return None
            outcome = run_behaviour(tool, arguments)
            if not outcome.ok:
                return None
            results[step.id] = outcome.result
        return render(task.golden_path.answer, results)
    except Exception:  # any failure means the reading agent does not reach the answer
        return None


def _by_position(served: dict[int, Any]) -> Reading:
    return lambda position, _tool, _arguments: (position in served, served.get(position))


def needs_later_pages(scenario: Scenario, task: Task, tool: str, page_size: int) -> bool:
    """True when an agent that reads only the first page of `tool`'s list would miss the canonical answer:
    only then does pagination bite."""
    from mcp_hazard.scenario.answers import answer_matches

    try:
        run = run_golden_path(scenario, task)
    except Exception:  # no proof possible (python behaviour not allowed here)
        return False
    for index, (_step_id, _arguments, result) in enumerate(run.steps):
        if task.golden_path.steps[index].tool != tool or not isinstance(result, dict):
            continue
        key = next((k for k, v in result.items() if isinstance(v, list) and len(v) > page_size), None)
        if key is None:
            continue
        answer = answer_with(scenario, task, {index: {**result, key: result[key][:page_size]}})
        if answer is None or not answer_matches(task.answer, answer if isinstance(answer, str) else str(answer)):
            return True
    return False

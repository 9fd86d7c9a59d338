"""Which values of a golden-path step's result the rest of the task needs, and whether a sibling tool supplies them.

A fallback or a cross-check only helps if the other tool answers with the values the task goes on to use. A value
counts as supplied when it appears among the sibling's result values: text without regard to case, numbers up to a
unit scale of 10^k for |k| <= 3 (euros and cents, kilograms and grams).
"""

from __future__ import annotations

import ast
import math
from typing import Any

from mcp_hazard.hazards.base import fallback_arguments, fallbacks_for
from mcp_hazard.scenario.behaviours import BehaviourFault, run_behaviour
from mcp_hazard.scenario.expressions import ExpressionError, parse_expression, template_expressions
from mcp_hazard.scenario.load import GoldenPathError, run_golden_path
from mcp_hazard.scenario.models import Scenario, Task

_cache: dict[tuple[int, str, str], list[str]] = {}


def leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    if value is None or isinstance(value, bool):
        return []
    return [value]


def _chain(node: ast.expr, root: str) -> list[Any] | None:
    """The access path of `node` if it reads from the name `root` (`a.b[0].c` -> ['b', 0, 'c'])."""
    if isinstance(node, ast.Name):
        return [] if node.id == root else None
    if isinstance(node, ast.Attribute):
        base = _chain(node.value, root)
        return None if base is None else [*base, node.attr]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _chain(node.value, root)
        return None if base is None else [*base, node.slice.value]
    return None


def _paths(source: str, root: str) -> list[list[Any]]:
    tree = parse_expression(source)
    found: list[list[Any]] = []
    extended: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Subscript):
            extended.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and id(node) not in extended:
            path = _chain(node, root)
            if path is not None:
                found.append(path)
    # a name read through a dynamic index (x[i]) stops the chain: the whole prefix is needed
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            path = _chain(node.value, root)
            if path is not None:
                found.append(path)
    return found


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
    """Leaves of step `step_index`'s result that later arguments or the answer read."""
    step_id = task.golden_path.steps[step_index].id
    templates: list[Any] = [s.arguments for s in task.golden_path.steps[step_index + 1 :]]
    templates.append(task.golden_path.answer)
    values: list[Any] = []
    for template in templates:
        for source in template_expressions(template):
            try:
                paths = _paths(source, step_id)
            except ExpressionError:
                continue
            for path in paths:
                values.extend(leaves(_resolve(result, path)))
    return values


def supplies(needed: list[Any], result: Any) -> bool:
    """True when every needed value appears in `result` (text case-blind, numbers up to a 10^k unit scale)."""
    have = leaves(result)
    texts = {str(v).strip().casefold() for v in have if isinstance(v, str)}
    numbers = [float(v) for v in have if isinstance(v, int | float)]
    for value in needed:
        if isinstance(value, int | float):
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

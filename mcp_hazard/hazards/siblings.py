"""Which tools of a scenario serve the same facts, and which the golden path calls: the scenario's own answers to
what the hazard kinds ask of its tools (tool_facts.py), kept apart so every module of the floor can read them."""

from __future__ import annotations

from typing import Any

from mcp_hazard.scenario.models import Scenario, Task, ToolSpec


def golden_tools(task: Task) -> list[str]:
    seen: list[str] = []
    for step in task.golden_path.steps:
        if step.tool not in seen:
            seen.append(step.tool)
    return seen


# siblings() per scenario object: id(scenario) -> (the scenario, its tools by name, {tool: siblings}). The entry holds
# the scenario itself, so its id cannot be reused while the entry lives; the oldest entry goes beyond the limit.
_SIBLINGS: dict[int, tuple[Scenario, dict[str, ToolSpec], dict[str, list[str]]]] = {}
_SIBLINGS_LIMIT = 64


def siblings(scenario: Scenario, tool: str) -> list[str]:
    """Other tools that serve a fact this tool serves: the fallbacks and cross-checks the scenario declares."""
    entry = _SIBLINGS.get(id(scenario))
    if entry is None or entry[0] is not scenario:
        while len(_SIBLINGS) >= _SIBLINGS_LIMIT:
            _SIBLINGS.pop(next(iter(_SIBLINGS)), None)
        by_name: dict[str, ToolSpec] = {}
        for each in scenario.tools:
            by_name.setdefault(each.name, each)  # the first of a name, as Scenario.tool finds it
        entry = _SIBLINGS[id(scenario)] = (scenario, by_name, {})
    try:
        found = entry[2].get(tool)
    except TypeError:  # not a name at all (unhashable), so no tool of the scenario has it
        return []
    if found is None:
        spec = entry[1].get(tool)
        if spec is None or not spec.serves:
            found = []
        else:
            facts = set(spec.serves)
            found = [other.name for other in scenario.tools if other.name != tool and facts & set(other.serves)]
        entry[2][tool] = found
    return list(found)  # a copy: callers may change it


def _required(spec: ToolSpec) -> list[str]:
    return [name for name in spec.input_schema.get("required", []) if isinstance(name, str)]


def fallback_arguments(
    scenario: Scenario, tool: ToolSpec, other: str, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    """Arguments for `other` that ask for the same fact: the declared mapping, else same-named arguments plus the
    one identifying argument carried across. None when no mapping exists."""
    from mcp_hazard.scenario.behaviours import argument_names
    from mcp_hazard.scenario.expressions import ExpressionError, render

    target = scenario.tool(other)
    if target is None:
        return None
    declared = next((f for f in tool.fallbacks if f.tool == other), None)
    if declared is not None:
        try:
            mapped = render(declared.arguments, argument_names(tool, arguments))
        except ExpressionError:
            return None
        return mapped if isinstance(mapped, dict) else None
    properties = set((target.input_schema.get("properties") or {}).keys())
    mapped = {name: value for name, value in arguments.items() if name in properties}
    missing = [name for name in _required(target) if name not in mapped]
    own = _required(tool)
    if len(missing) == 1 and len(own) == 1 and own[0] in arguments:
        mapped[missing[0]] = arguments[own[0]]
        missing = []
    return mapped if not missing else None


def fallbacks_for(scenario: Scenario, task: Task, tool: str) -> list[str]:
    """Served siblings of `tool` reachable by a declared or derivable argument mapping."""
    spec = scenario.tool(tool)
    if spec is None:
        return []
    served = {t.name for t in scenario.task_tools(task)}
    found = []
    for other in siblings(scenario, tool):
        if other not in served:
            continue
        target = scenario.tool(other)
        declared = any(f.tool == other for f in spec.fallbacks)
        carry = target is not None and (
            all(name in (spec.input_schema.get("properties") or {}) for name in _required(target))
            or (len(_required(spec)) == 1 and len([n for n in _required(target)
                                                   if n not in (spec.input_schema.get("properties") or {})]) == 1)
        )  # fmt: skip
        if declared or carry:
            found.append(other)
    return found

"""What a tool serves (`serves:`), and which other tools can stand in for it on a task's golden path.

A fact is carried by fields of a tool's output: `serves: {flight_fare: price_eur}` on get_fare and
`serves: {flight_fare: fare_cents}` on fare_archive_lookup say that both give the fare, in two fields. A list
(`serves: [flight_fare]`) says the whole output carries each fact. Another tool stands in for a golden-path step
only when it serves, for every field the task reads from that step's result, a fact the step's tool carries in that
field: the archive stands in for get_fare where a task reads `price_eur`, never where it reads `fare_class`, which
carries no fact the archive serves. The scorer's premature rule, its fallback and cross-check verdicts and the
guarded harness all ask this one question (docs/scenario-format.md, docs/scoring.md).

`validate` checks every field a mapping names against the tool's output: its `output_schema` when it declares one,
else every result its behaviour gives that is written out (table rows, default, constant, compute).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp_hazard.scenario.expressions import ExpressionError, access_paths, template_expressions
from mcp_hazard.scenario.models import (
    ComputeBehaviour,
    ConstantBehaviour,
    Scenario,
    TableBehaviour,
    Task,
    ToolSpec,
)
from mcp_hazard.suggest import did_you_mean

WHOLE = "$"
FieldKey = tuple[str, ...]  # a field as a path of names; () is the whole output


def field_key(field: str) -> FieldKey:
    return () if field == WHOLE else tuple(field.split("."))


def facts_of(tool: ToolSpec) -> dict[str, tuple[FieldKey, ...]]:
    """Each fact the tool serves, with the fields that carry it (`()`: the whole output)."""
    serves = tool.serves
    if isinstance(serves, dict):
        return {
            fact: tuple(field_key(f) for f in ([fields] if isinstance(fields, str) else fields))
            for fact, fields in serves.items()
        }
    return {fact: ((),) for fact in serves}


def read_paths(task: Task, index: int) -> Iterator[list[str | int]]:
    """Each access path into step `index`'s result that a later step's arguments or the golden answer read, in the
    order they are written (an expression that does not parse reads nothing)."""
    step_id = task.golden_path.steps[index].id
    templates: list[Any] = [s.arguments for s in task.golden_path.steps[index + 1 :]]
    templates.append(task.golden_path.answer)
    for template in templates:
        for source in template_expressions(template):
            try:
                paths = access_paths(source, step_id)
            except ExpressionError:
                continue
            yield from paths


def step_reads(task: Task, index: int) -> list[FieldKey]:
    """The fields later steps' arguments and the golden answer read from step `index`'s result, as paths of names
    (a list index says which item, not which field, so it is left out); `()` when the whole result is read."""
    reads: list[FieldKey] = []
    for path in read_paths(task, index):
        key = tuple(str(part) for part in path if not isinstance(part, int))
        if key not in reads:
            reads.append(key)
    return reads


def _covers(field: FieldKey, read: FieldKey) -> bool:
    """A fact carried in `field` holds everything read at or below it."""
    return read[: len(field)] == field


def stands_in(own: ToolSpec, other: ToolSpec, reads: list[FieldKey]) -> bool:
    """Whether `other` serves what a task reads (`reads`) from a result of `own`: for each read field, a fact `own`
    carries there. A result nothing reads needs any shared fact."""
    mine, theirs = facts_of(own), facts_of(other)
    if not reads:
        return bool(mine.keys() & theirs.keys())
    return all(
        any(fact in theirs for fact, fields in mine.items() if any(_covers(f, read) for f in fields)) for read in reads
    )


# (id(scenario), task id) -> (the scenario, each golden step's stand-ins): the entry holds the scenario, so its id
# cannot be reused while the entry lives.
_STAND_INS: dict[tuple[int, str], tuple[Scenario, list[list[str]]]] = {}


def step_stand_ins(scenario: Scenario, task: Task) -> list[list[str]]:
    """For each golden-path step, the other tools of the scenario that stand in for its tool on this task."""
    key = (id(scenario), task.id)
    cached = _STAND_INS.get(key)
    if cached is not None and cached[0] is scenario:
        return cached[1]
    found: list[list[str]] = []
    for index, step in enumerate(task.golden_path.steps):
        own = scenario.tool(step.tool)
        reads = step_reads(task, index)
        found.append(
            [o.name for o in scenario.tools if own is not None and o.name != own.name and stands_in(own, o, reads)]
        )
    if len(_STAND_INS) > 4096:
        _STAND_INS.clear()
    _STAND_INS[key] = (scenario, found)
    return found


def tool_stand_ins(scenario: Scenario, task: Task, tool: str) -> list[str]:
    """Tools that stand in for `tool` at every golden step that calls it; for a tool off the golden path, every
    tool sharing one of its facts (nothing the task reads depends on it)."""
    steps = [i for i, step in enumerate(task.golden_path.steps) if step.tool == tool]
    own = scenario.tool(tool) if isinstance(tool, str) else None
    if own is None:
        return []
    if not steps:
        return [o.name for o in scenario.tools if o.name != tool and stands_in(own, o, [])]
    every = step_stand_ins(scenario, task)
    return [name for name in every[steps[0]] if all(name in every[i] for i in steps[1:])]


# -- validate: the fields a mapping names are fields of the tool's output ----------------------------------------------


def _schema_fields(schema: Any, path: FieldKey) -> tuple[list[str], int] | None:
    """None when `path` is a field the schema declares (through arrays to their items) or one it cannot rule out (an
    object that lists no properties); else the property names where it stops and how deep it got."""
    node = schema
    for depth, name in enumerate(path):
        while isinstance(node, dict) and node.get("type") == "array":
            node = node.get("items", {})
        if not isinstance(node, dict):
            return [], depth
        properties = node.get("properties")
        if not isinstance(properties, dict):
            return None if node.get("type") in (None, "object") else ([], depth)
        if name not in properties:
            return sorted(properties), depth
        node = properties[name]
    return None


def _static_results(tool: ToolSpec) -> Iterator[tuple[str, Any]]:
    """(where, result) for every result the behaviour writes out; errors give none, and a python function's
    results cannot be known here."""
    behaviour = tool.behaviour
    if isinstance(behaviour, TableBehaviour):
        for i, row in enumerate(behaviour.rows):
            if row.error is None:
                yield f"behaviour.rows[{i}].result", row.result
        if behaviour.default.error is None:
            yield "behaviour.default.result", behaviour.default.result
    elif isinstance(behaviour, ComputeBehaviour) or (
        isinstance(behaviour, ConstantBehaviour) and behaviour.error is None
    ):
        yield "behaviour.result", behaviour.result


def _items(nodes: list[Any]) -> Iterator[Any]:
    for node in nodes:
        if isinstance(node, list):
            yield from _items(node)
        else:
            yield node


def _result_fields(result: Any, path: FieldKey) -> tuple[list[str], int] | None:
    """None when every object along `path` in `result` has the field (through lists to their items; a template or
    an empty list may hold anything); else the names found where it stops and how deep it got."""
    nodes = [result]
    for depth, name in enumerate(path):
        following = []
        for node in _items(nodes):
            if isinstance(node, str) and "{{" in node:
                continue  # a template: its value is not known here
            if not isinstance(node, dict):
                return [], depth
            if name not in node:
                return sorted(node), depth
            following.append(node[name])
        nodes = following
    return None


def serves_problems(tool: ToolSpec) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(path below the tool, message) for each field a `serves:` mapping names that the tool's output lacks."""
    if not isinstance(tool.serves, dict):
        return
    for fact, fields in tool.serves.items():
        listed = [fields] if isinstance(fields, str) else fields
        for index, written in enumerate(listed):
            path = field_key(written)
            missing, source = None, "its output_schema"
            if path and tool.output_schema is not None:
                missing = _schema_fields(tool.output_schema, path)
            elif path:
                found = ((place, _result_fields(result, path)) for place, result in _static_results(tool))
                source, missing = next(((p, m) for p, m in found if m is not None), ("", None))
            if missing is None:
                continue
            names, depth = missing
            at = f" at {'.'.join(path[:depth])!r}" if depth else ""
            has = f"; {source} has {', '.join(names)}" if names else ""
            yield (
                ("serves", fact) if isinstance(fields, str) else ("serves", fact, index),
                f"{written!r} is not a field of the output of {tool.name!r}{at}{did_you_mean(path[depth], names)}{has}",
            )

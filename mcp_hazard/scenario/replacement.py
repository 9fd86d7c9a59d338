"""Declared replacements (`replacement:` on a tool): whether one is sound, and how arguments move between the
original shape and the replacement's.

Sound means the replacement is the same tool behind another interface: every original argument has exactly one
place, that place accepts exactly what the original argument accepts (descriptions aside), a required original
argument is required there too, and nothing else is required. Then a call valid against the served schema maps to a
call valid against the original one, and back, so the behaviour cannot tell them apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp_hazard.scenario.arguments import schema_problem
from mcp_hazard.scenario.models import Replacement, ToolSpec
from mcp_hazard.suggest import did_you_mean

Where = tuple[str | int, ...]  # a path below the tool's `replacement` key
PROSE = ("description", "title", "examples")


def segments(place: str) -> tuple[str, ...]:
    return tuple(place.split("."))


def to_original(replacement: Replacement, arguments: dict[str, Any]) -> dict[str, Any]:
    """The original call for arguments in the replacement's shape (places not given are left out)."""
    out: dict[str, Any] = {}
    for original, place in replacement.arguments.items():
        node: Any = arguments
        for part in segments(place):
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            out[original] = node
    return out


def to_replacement(replacement: Replacement, arguments: dict[str, Any]) -> dict[str, Any]:
    """The replacement's call for original arguments (the inverse of `to_original` on sound declarations)."""
    out: dict[str, Any] = {}
    for original, value in arguments.items():
        place = replacement.arguments.get(original)
        if place is None:
            continue
        *parents, leaf = segments(place)
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _without_prose(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_prose(v) for k, v in schema.items() if k not in PROSE}
    if isinstance(schema, list):
        return [_without_prose(v) for v in schema]
    return schema


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _required(schema: Any) -> list[str]:
    required = schema.get("required") if isinstance(schema, dict) else None
    return [r for r in required if isinstance(r, str)] if isinstance(required, list) else []


def _required_places(schema: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name in _required(schema):
        place = (*prefix, name)
        yield place
        yield from _required_places(_properties(schema).get(name), place)


def _place_problem(
    schema: Any, parts: tuple[str, ...], place: str, original: str, is_required: bool, accepts: Any
) -> str | None:
    """Whether the place `parts` in the replacement's schema can hold the argument `original`: it exists, is required
    where the argument is, and accepts exactly what the argument accepts."""
    node: Any = schema
    for depth, part in enumerate(parts):
        if part not in _properties(node):
            at = ".".join(parts[:depth]) or "the top level"
            hint = did_you_mean(part, _properties(node))
            return f"{place!r}: no property {part!r} at {at} of the replacement's input_schema{hint}"
        if is_required and part not in _required(node):
            return f"{place!r}: {part!r} must be required, since {original!r} is"
        node = _properties(node)[part]
    if _without_prose(node) != _without_prose(accepts):
        return f"{place!r} must accept exactly what {original!r} accepts (same schema but for prose)"
    return None


def replacement_problems(tool: ToolSpec, taken: set[str]) -> list[tuple[Where, str, bool]]:
    """What is wrong with `tool.replacement`: its path below `replacement`, the message, and whether the key (not its
    value) is at fault. `taken` holds the names the replacement may not use (tools, earlier replacements)."""
    replacement = tool.replacement
    if replacement is None:
        return []
    problems: list[tuple[Where, str, bool]] = []
    if replacement.name in taken:
        problems.append(
            (("name",), f"{replacement.name!r} is already the name of a tool or of another replacement", False)
        )
    schema = replacement.input_schema
    problem = schema_problem(schema)
    if problem or schema.get("type") != "object":
        problems.append((("input_schema",), problem or "the schema's type must be 'object'", False))
        return problems
    originals = _properties(tool.input_schema)
    required = set(_required(tool.input_schema))
    missing = sorted(set(originals) - set(replacement.arguments))
    if missing:
        problems.append((("arguments",), f"every argument of {tool.name!r} needs a place; missing {missing}", False))
    places: dict[tuple[str, ...], str] = {}
    for original, place in replacement.arguments.items():
        where: Where = ("arguments", original)
        if original not in originals:
            hint = did_you_mean(original, originals)
            problems.append((where, f"{original!r} is not an argument of {tool.name!r}{hint}", True))
            continue
        parts = segments(place)
        clash = next((other for p, other in places.items() if p[: len(parts)] == parts or parts[: len(p)] == p), None)
        if clash is not None:
            problems.append((where, f"{place!r} overlaps the place of {clash!r}; each argument needs its own", False))
            continue
        places[parts] = original
        problem = _place_problem(schema, parts, place, original, original in required, originals[original])
        if problem is not None:
            problems.append((where, problem, False))
    for needed in _required_places(schema):
        if not any(p[: len(needed)] == needed for p in places):
            dotted = ".".join(needed)
            problems.append(
                (("input_schema",), f"{dotted!r} is required but no original argument is placed there", False)
            )
    return problems

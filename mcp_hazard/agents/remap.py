"""Planned arguments re-mapped onto a listed tool's input schema, for a renamed, reshaped or alternative tool.

Each planned argument goes to the documented property it fits best by names, descriptions and value shape (the best
total placement, not a greedy one), required constants are filled in, values take their documented form, and the
result is nested into the documented shape. The recovering agent uses it for every tool it reaches by fit.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.agents.argument_fit import best_assignment, fit_value, name_affinity, value_fit
from mcp_hazard.agents.leaves import flat_view, nest


def _affinity(key: str, value: Any, name: str, prop: dict[str, Any]) -> float:
    """How well argument `key` (with `value`) fits property `name`: words of the names and the property's
    description, and whether the value keeps the documented type, pattern, enum, date format and examples."""
    return name_affinity(key, name, prop) + value_fit(prop, value)


def _placements(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, str]:
    """Our argument name -> the property it goes to: exact names first, then the placement of the rest with the best
    total fit (not greedily: one strong but misleading clue, such as a documented example of the right shape on the
    wrong property, must not pull a value away from where the names and descriptions put it)."""
    props: dict[str, Any] = dict(schema.get("properties") or {})
    placed: dict[str, str] = {k: k for k in arguments if k in props}
    free = [p for p in props if p not in placed.values()]
    rest = [k for k in arguments if k not in placed]
    if rest and free:
        scores = [
            [_affinity(k, arguments[k], p, props[p] if isinstance(props[p], dict) else {}) for p in free] for k in rest
        ]
        _total, columns = best_assignment(scores)
        for key, column in zip(rest, columns, strict=True):
            if column is not None and scores[rest.index(key)][column] >= 0.3:
                placed[key] = free[column]
    # what is left goes in order to what is left: renaming policies keep the documented order
    left = [k for k in arguments if k not in placed]
    open_props = [p for p in props if p not in placed.values()]
    if left and len(left) <= len(open_props):
        placed.update(zip(left, open_props, strict=False))
    return placed


def remap_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Our arguments placed on the schema's leaves (nested objects included), required constants added, each value
    in its documented form, then nested back into the documented shape."""
    flat, by_name = flat_view(schema, arguments)
    props: dict[str, Any] = dict(flat.get("properties") or {})
    placed = _placements(flat, arguments)
    args = {placed.get(k, k): v for k, v in arguments.items()}
    for name in flat.get("required") or []:
        prop = props.get(name) or {}
        if name not in args and "const" in prop:
            args[name] = prop["const"]
    args = {name: fit_value(props.get(name) or {}, value) for name, value in args.items()}
    return nest(args, by_name)

"""Which other listed tools to ask when a tool fails for good or answers with a value that calls itself stale.

A fallback (after a permanent failure) and a cross-check (after a stale answer) both need another tool that serves
the same fact. Choosing it is the same problem as choosing the tool a renamed plan step means, so it uses the same
evidence (`matching.rank_tools`): the planned step's words against each tool's description, how well the planned
arguments fit its schema, the result fields it documents, and side effects (a step that reads never asks a tool
that sends, books or pays).

The call to an alternative is built from the plan's arguments, in the original shape, never from the arguments sent
to the failed tool: those are in the failed tool's served shape (its own argument names, its `request` object, its
augment constant) and say nothing true about another tool's interface. Placing them on each alternative's schema is
the caller's job (`RecoveringAgent.remap`); `unfilled` then says whether that call can be valid at all, so a tool
the plan cannot call costs no request.

Only what `tools/list` served is read; every choice is a plain function of it (ties keep listing order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mcp_types as types

from mcp_hazard.agents.leaves import leaves
from mcp_hazard.agents.matching import planned_write, rank_tools
from mcp_hazard.agents.normalise import convert_field

MAX_ALTERNATIVES = 3  # tools asked for one fallback or cross-check: the best fits only, so a miss stays cheap
MIN_SCORE = 0.0  # below this a tool fits the planned step worse than a tool that says nothing about it


def alternatives(
    tools: Sequence[types.Tool],
    failed: str,
    wanted: str,
    arguments: dict[str, Any],
    fields: Sequence[str] = (),
    named: Sequence[str] = (),
    callable_: Callable[[types.Tool], bool] = lambda _tool: True,
) -> list[types.Tool]:
    """Listed tools other than `failed` that may serve what the planned `wanted(arguments)` serves, best first: at
    most `MAX_ALTERNATIVES`, each fitting better than `MIN_SCORE`, tools with side effects left out when the step
    only reads, and tools `callable_` rejects (the plan cannot fill what they require) left out before counting,
    so they take no place from a tool that can answer. `fields` are the result fields later steps read. A listed
    tool in `named` (an error or a hint that names where to go instead) comes first, unless it writes for a
    reading step."""
    others = [tool for tool in tools if tool.name != failed]
    by_name = {tool.name: tool for tool in others}
    reading = not planned_write(wanted)
    ranked = [c for c in rank_tools(others, wanted, arguments, fields) if not (reading and c.writes)]
    hinted = [c.name for c in ranked if c.name in named]
    fitting = [c.name for c in ranked if c.score > MIN_SCORE and c.name not in hinted]
    chosen = [by_name[name] for name in [*hinted, *fitting]]
    return [tool for tool in chosen if callable_(tool)][:MAX_ALTERNATIVES]


def unfilled(schema: dict[str, Any], call: dict[str, Any], planned: dict[str, Any] | None = None) -> list[str]:
    """Required places of `schema` (nested ones by dotted path) that `call` leaves empty: a call the tool would
    refuse before doing anything. `planned` are the plan's arguments the call was built from (an object the plan
    passes whole is one place, as `matching.leaves` reads it)."""
    missing = []
    for leaf in leaves(schema, planned):
        if not leaf.required:
            continue
        node: Any = call
        for part in leaf.path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            missing.append(".".join(leaf.path))
    return missing


def named_tools(texts: Sequence[str], tools: Sequence[types.Tool]) -> list[str]:
    """Listed tools an error or hint names as a whole word ("use another tool that serves the same data:
    fare_archive_lookup."), in listing order."""
    said = " ".join(texts)
    out = []
    for tool in tools:
        start = said.find(tool.name)
        while start >= 0:
            end = start + len(tool.name)
            before = said[start - 1] if start else " "
            after = said[end] if end < len(said) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                out.append(tool.name)
                break
            start = said.find(tool.name, end)
    return out


def in_expected_shape(value: Any, fields: Sequence[str]) -> Any:
    """An alternative's answer with the fields the plan reads added under the planned names and units
    (`price_eur` from `fare_cents`), so later steps read it as if the planned tool had answered."""
    if not isinstance(value, dict):
        return value
    shaped = dict(value)
    for field in fields:
        converted = convert_field(value, field)
        if converted is not None:
            shaped[field] = converted
    return shaped

"""Checking the state after a write failed in a way that may hide its effect (a timeout, a reset connection).

A write whose reply was lost may have gone through; sending it again would then do it twice (two orders, two
payments). A careful agent first reads the state with a tool that shows such writes, and repeats the write only when
that read does not show it. Which tool shows it is read from what MCP serves: a tool an error or hint names, else
the read-only tools that fit the write best (`matching.rank_tools`: words of the write's name and description, the
arguments the read can be filled from). The write counts as done when one item of a read's result holds every value
the write was sent (its recipient, amount, SKU and quantity...); that item stands for the write's lost reply. A
removal (delete, cancel) is not checked: what shows it is an absence, and a repeat removes nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_hazard.agents.drive import text_of
from mcp_hazard.agents.fallback import named_tools, unfilled
from mcp_hazard.agents.matching import rank_tools, tool_writes
from mcp_hazard.agents.normalise import read_result
from mcp_hazard.hazards.needed_values import supplies

MAX_CHECKS = 2  # read tools asked whether one write went through: the named one or the best fits
MIN_INSIDE = 16  # a text this long counts as shown inside a longer one (appended to a file's content)
REMOVING = ("delete", "remove", "cancel", "unsubscribe")  # a removal shows as an absence, which no record holds


async def went_through(
    client: Client,
    tools: Sequence[types.Tool],
    write: str,
    arguments: dict[str, Any],
    said: Sequence[str],
    timeout: float,
) -> tuple[Any | None, int]:
    """What a read tool shows of a call of `write` with `arguments` when it went through, else None (repeat it);
    and how many calls asking took."""
    listed = {tool.name: tool for tool in tools}
    asked = 0
    if write.lower().startswith(REMOVING):
        return None, asked  # its repeat removes nothing more (or says it is gone): retried without a check
    for other in checking_tools(tools, write, arguments, said):
        try:
            result = await client.call_tool(
                other, check_arguments(listed[other], arguments), read_timeout_seconds=timeout
            )
        except MCPError:
            result = None
        asked += 1
        if result is None or result.is_error:
            continue
        asked_with = check_arguments(listed[other], arguments)
        rest = {name: value for name, value in arguments.items() if name not in asked_with}  # what the read tells
        shown = shown_write(read_result(text_of(result), result.structured_content), rest)
        if shown is not None:
            return shown, asked
    return None, asked


def checking_tools(
    tools: Sequence[types.Tool], write: str, arguments: dict[str, Any], said: Sequence[str]
) -> list[str]:
    """The read tools to ask whether a call of `write` went through, best first: those the error or hint names,
    then the read-only tools that fit the write best and need no argument the write did not get."""
    reads = [tool for tool in tools if tool.name != write and not tool_writes(tool)]
    named = named_tools(said, reads)
    fillable = [tool for tool in reads if not unfilled(tool.input_schema or {}, check_arguments(tool, arguments))]
    ranked = [c.name for c in rank_tools(fillable, write, arguments)] if fillable else []
    out: list[str] = []
    for name in [*named, *ranked]:
        if name not in out:
            out.append(name)
    return out[:MAX_CHECKS]


def check_arguments(tool: types.Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The write's arguments the read tool takes by the same name (a list of orders takes none)."""
    properties = (tool.input_schema or {}).get("properties") or {}
    return {name: value for name, value in arguments.items() if name in properties}


def shown_write(result: Any, arguments: dict[str, Any]) -> Any:
    """The smallest object in a read's result that holds every value the write was sent (but those the read was
    asked with), or None: the write went through when some record carries all of them, or, for a list of plain
    values (the members of a channel), when the list holds them."""
    needed = [leaf for value in arguments.values() if not _nested(value) for leaf in _scalars(value)]
    if not needed:
        return None
    found: list[tuple[int, int, Any]] = []  # (size, -depth, record): the smallest, then the deepest, wins
    _holding(result, needed, found, 0)
    if found:
        return min(found, key=lambda entry: entry[:2])[2]
    plain = isinstance(result, list) and not any(isinstance(item, dict | list) for item in result)
    return result if plain and holds(result, needed) else None


def holds(record: Any, needed: list[Any]) -> bool:
    """Whether `record` carries every needed value: a text as a whole text or inside a longer one (an append adds
    its text to a file's content), any other value as `supplies` compares it."""
    texts = [leaf.strip().casefold() for leaf in _scalars(record) if isinstance(leaf, str)]
    for value in needed:
        if isinstance(value, str):
            want = value.strip().casefold()
            # A passage (long, several words) may sit inside a longer text; a short text ("r") or one token (an
            # e-mail address) is inside too many others to say anything.
            long = len(want) >= MIN_INSIDE and len(want.split()) > 1
            if not any(want == text or (long and want in text) for text in texts):
                return False
        elif not supplies([value], record):
            return False
    return True


def _holding(value: Any, needed: list[Any], found: list[tuple[int, int, Any]], depth: int) -> None:
    if isinstance(value, dict):
        if holds(value, needed):
            found.append((len(_scalars(value)), -depth, value))
        for item in value.values():
            _holding(item, needed, found, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _holding(item, needed, found, depth + 1)


def _nested(value: Any) -> bool:
    """An argument holding objects (attachments as `{type, file_id}`): a tool stores such descriptors in its own
    form, so their leaves are not looked for."""
    return isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict | list) for v in value))


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _scalars(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _scalars(item)]
    return [] if value is None else [value]

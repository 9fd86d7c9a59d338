"""Verification by re-reading: a value the plan goes on to use is read twice before it is trusted.

A tool can answer a correct call with a plausible wrong value and no sign of it (the `silent_wrong_value` hazard;
flaky replicas and caches do the same in the wild). Nothing in one reading tells the two apart, so the recovering
agent asks again: when the second reading agrees on the fields the plan reads, the value stands; when it disagrees,
a third reading decides, and the value two readings share wins. The agent never learns which reading was wrong from
anything but the readings themselves.

Only reads are repeated (a tool the plan writes with is called once), and only when the plan reads fields of the
result; a value that already came from another tool (a fallback or a cross-check) was confirmed by that source.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp_hazard.agents.normalise import convert_field

Reader = Callable[[], Awaitable[Any]]


def read_fields(value: Any, fields: list[str], paths: Sequence[Sequence[Any]] = ()) -> str:
    """What the plan takes from a reading, as comparable text: the values at the paths it reads into the result
    (`[3, 'amount']`: item 3's amount), else the fields it reads, else the whole value."""
    if paths:
        value = [_at(value, list(path)) for path in paths]
    elif fields and isinstance(value, dict):
        value = {f: convert_field(value, f) for f in fields}
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _at(value: Any, path: list[Any]) -> Any:
    """The value at `path`, reading a list the result wraps (a paged `items`) as the list; None when absent."""
    for key in path:
        if isinstance(key, int) and isinstance(value, dict):
            value = listed(value)
        found = (isinstance(value, dict) and isinstance(key, str) and key in value) or (
            isinstance(value, list) and isinstance(key, int) and -len(value) <= key < len(value)
        )
        if not found:
            return None
        value = value[key]
    return value


def listed(value: Any) -> Any:
    """The list a result wraps, when it is an object with one list and otherwise only page markers or metadata
    (`{"items": [...], "page": 1, ...}`); the value itself otherwise."""
    if not isinstance(value, dict):
        return value
    lists = [item for item in value.values() if isinstance(item, list)]
    return lists[0] if len(lists) == 1 else value


def majority(readings: list[Any], fields: list[str], paths: Sequence[Sequence[Any]] = ()) -> Any:
    """The reading whose fields most readings share; on a tie, the latest of the most shared."""
    keys = [read_fields(r, fields, paths) for r in readings]
    best = max(range(len(readings)), key=lambda i: (keys.count(keys[i]), i))
    return readings[best]


async def confirmed(first: Any, read: Reader, fields: list[str], paths: Sequence[Sequence[Any]] = ()) -> Any:
    """`first` checked against a second reading, and a third when they disagree: the value that repeats. A reading
    that fails is no evidence: the readings so far decide."""
    readings = [first]
    for _ in range(2):
        try:
            readings.append(await read())
        except Exception:  # the tool failed on a re-read: keep what was read
            break
        keys = {read_fields(r, fields, paths) for r in readings}
        if len(keys) < len(readings):  # two readings agree
            break
    return majority(readings, fields, paths)

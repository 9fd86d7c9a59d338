"""Arguments addressed by dotted paths (`request.stay_date`), the way errors name a nested argument.

An error from an intervened interface names an argument where it sits in the served shape; a correction has to find
and change it there, not only at the top level.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from mcp_hazard.agents.leaves import leaves, put

_MISSING = object()


def get_path(arguments: dict[str, Any], path: str) -> Any:
    """The value at `path`, or `_MISSING`."""
    node: Any = arguments
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def has_path(arguments: dict[str, Any], path: str) -> bool:
    return get_path(arguments, path) is not _MISSING


def with_path(arguments: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `arguments` with `value` at `path` (objects on the way are created)."""
    out = copy.deepcopy(arguments)
    put(out, path.split("."), value)
    return out


def without_path(arguments: dict[str, Any], path: str) -> dict[str, Any]:
    out = copy.deepcopy(arguments)
    *parents, last = path.split(".")
    node: Any = out
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(last, None)
    return out


def moved(arguments: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The value at `old` moved to `new` (an argument renamed in place)."""
    return with_path(without_path(arguments, old), new, get_path(arguments, old))


def page_argument(schema: dict[str, Any] | None, said: str = "") -> str:
    """Where the page number goes: the argument an error or hint names next to "page", else the integer leaf whose
    name or description speaks of pages, else `page`."""
    named = re.search(r"'([A-Za-z0-9_.]+)' argument", said)
    if named and "page" in said.lower():
        return named.group(1)
    for leaf in leaves(schema or {}):
        text = " ".join([leaf.path[-1], str(leaf.prop.get("description", ""))]).lower()
        if leaf.prop.get("type") == "integer" and re.search(r"\bpages?\b", text.replace("_", " ")):
            return ".".join(leaf.path)
    return "page"

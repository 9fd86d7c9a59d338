"""A real server's tool result as a value hazards can act on, and a changed value written back into its text.

The value of a result is its structured content when it has one, else the JSON its one text block holds, else that
text. Paths into a value are dotted (`target.datetime`, `items.0.price`); `$` is the whole value.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from mcp_hazard.json_parse import loads
from mcp_hazard.json_text import indented

_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\d|\.\d)")
"""A number standing on its own or before a unit (`42`, `9.0h`, `-3.5`), not a piece of a longer word or number."""


def value_of(result: dict[str, Any]) -> Any:
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    texts = text_blocks(result)
    if len(texts) == 1:
        try:
            parsed = loads(texts[0])
        except ValueError:
            return texts[0]
        return parsed if isinstance(parsed, dict | list) else texts[0]
    return "\n".join(texts) if texts else None


def text_blocks(result: dict[str, Any]) -> list[str]:
    return [
        str(b.get("text", "")) for b in result.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"
    ]


def error_text(result: dict[str, Any]) -> str:
    return "\n".join(text_blocks(result)) or "the tool reported an error"


def split_path(path: str) -> list[str | int]:
    if path in ("$", ""):
        return []
    return [int(part) if part.isdigit() else part for part in path.split(".")]


def get_path(value: Any, path: list[str | int]) -> tuple[bool, Any]:
    for key in path:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, dict) and str(key) in value:
            value = value[str(key)]
        elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
            value = value[key]
        else:
            return False, None
    return True, value


def set_path(value: Any, path: list[str | int], new: Any) -> Any:
    """A copy of `value` with the node at `path` set to `new` (the whole value for an empty path)."""
    if not path:
        return new
    out = copy.deepcopy(value)
    node = out
    for key in path[:-1]:
        node = node[key if not isinstance(node, dict) or key in node else str(key)]
    last = path[-1]
    node[last if not isinstance(node, dict) or last in node else str(last)] = new
    return out


def numbers_in_text(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of each free-standing number in a text."""
    return [(m.start(), m.end(), m.group()) for m in _NUMBER_IN_TEXT.finditer(text)]


def move_numbers(text: str, factor: float) -> str:
    """Every free-standing number in a text moved by `factor`, integers staying integers and always changing."""

    def moved(match: re.Match[str]) -> str:
        token = match.group()
        if "." in token:
            places = len(token.split(".")[1])
            return f"{float(token) * factor:.{places}f}"
        number = int(token)
        new = round(number * factor)
        return str(new if new != number else number + 1)

    return _NUMBER_IN_TEXT.sub(moved, text)


def _leaves(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*prefix, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*prefix, index))]
    return [(prefix, value)]


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def rewrite_text(raw: dict[str, Any], old: Any, new: Any) -> str:
    """The text a changed value is served as, in the form the server used: the value itself for a text result, JSON
    for a JSON one, and for prose beside structured content, the prose with each changed leaf written anew (leaves
    the prose does not show, and new fields, added as `key: value` lines)."""
    texts = text_blocks(raw)
    if isinstance(new, str):
        return new
    if len(texts) == 1:
        try:
            if loads(texts[0]) == old:
                return indented(new)
        except ValueError:
            pass
    text = "\n".join(texts)
    if not text:
        return indented(new)
    before = dict(_leaves(old))
    extra: list[str] = []
    for path, leaf in _leaves(new):
        if path in before and before[path] == leaf:
            continue
        if path in before and isinstance(before[path], str | int | float) and _shown(before[path]) in text:
            text = text.replace(_shown(before[path]), _shown(leaf))
        else:
            extra.append(f"{'.'.join(map(str, path)) or 'value'}: {_shown(leaf)}")
    return text + ("\n" + "\n".join(extra) if extra else "")

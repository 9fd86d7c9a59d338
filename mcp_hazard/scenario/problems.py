"""Problems found in a user's file, each placed at the line and column of the field it is about, and pydantic's
validation errors turned into such problems (one line each, in the user's words)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mcp_hazard.errors import Problem
from mcp_hazard.scenario.arguments import describe_value
from mcp_hazard.scenario.yaml_source import Path, Positions, format_path
from mcp_hazard.suggest import did_you_mean

M = TypeVar("M", bound=BaseModel)
_QUOTED = re.compile(r"'([^']*)'")  # the choices in pydantic's "expected 'a', 'b' or 'c'"


class Problems:
    """Problems found in one file, each placed at the line and column of the field it is about."""

    def __init__(self, file: str, positions: Positions) -> None:
        self.file, self.positions, self.items = file, positions, []  # type: ignore[var-annotated]

    def add(self, path: Path, message: str, *, at_key: bool = False) -> None:
        where = self.positions.locate(path, prefer_key=at_key)
        line, col = where if where else (None, None)
        problem = Problem(self.file, line, col, format_path(path), message)
        if problem not in self.items:  # a tool's hazard checked once per task would repeat itself
            self.items.append(problem)


def _data_path(loc: tuple[Any, ...], data: Any) -> Path:
    """Turn a pydantic error location into a path through the data, skipping union tags that are not keys."""
    path: list[str | int] = []
    node = data
    for part in loc:
        in_map = isinstance(node, dict) and part in node
        if in_map or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            path.append(part)
            node = node[part]
    return tuple(path)


def _pydantic_message(error: Any, field: str | int) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown key {field!r}"
    if kind == "missing":
        return f"missing required field {field!r}"
    if kind == "literal_error":
        given, expected = error.get("input"), error["ctx"]["expected"]
        hint = did_you_mean(given, _QUOTED.findall(expected)) if isinstance(given, str) else ""
        return f"{describe_value(given)} is not allowed{hint}; expected {expected}"
    if kind == "union_tag_invalid":
        tag, expected = error["ctx"]["tag"], error["ctx"]["expected_tags"]
        return f"unknown kind {tag!r}{did_you_mean(str(tag), _QUOTED.findall(expected))}; expected {expected}"
    if kind == "union_tag_not_found":
        return f"missing {error['ctx']['discriminator'].strip(chr(39))!r}; say which kind of behaviour this is"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    if "input" in error and kind.endswith("_type"):
        message += f", got {describe_value(error['input'])}"
    return message


def validate_model(model: type[M], data: Any, problems: Problems) -> M | None:
    """`model` validated from file data, or None with every pydantic error added to `problems` at its place."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            path = _data_path(loc, data)
            field = loc[-1] if loc else ""
            if error["type"] == "union_tag_invalid":  # the tag's own key, not the whole mapping, is at fault
                path = _data_path((*loc, str(error["ctx"]["discriminator"]).strip("'")), data)
            at_key = error["type"] == "extra_forbidden" or "[key]" in loc  # a mapping's key is at fault
            problems.add(path, _pydantic_message(error, field), at_key=at_key)
        return None

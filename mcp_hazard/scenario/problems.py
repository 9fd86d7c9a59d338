"""Problems found in a user's file, each placed at the line and column of the field it is about, and pydantic's
validation errors turned into such problems (one line each, in the user's words)."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mcp_hazard.errors import Problem
from mcp_hazard.scenario.arguments import describe_value
from mcp_hazard.scenario.yaml_source import Path, Positions, format_path

M = TypeVar("M", bound=BaseModel)


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
        return f"{describe_value(error.get('input'))} is not allowed; expected {error['ctx']['expected']}"
    if kind == "union_tag_invalid":
        return f"unknown kind {error['ctx']['tag']!r}; expected {error['ctx']['expected_tags']}"
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
            problems.add(path, _pydantic_message(error, field), at_key=error["type"] == "extra_forbidden")
        return None

"""How well planned arguments fit a tool's input schema: each value against each documented property (type,
constant, enum, pattern, date format, documented examples), each name against each property's name and description,
and the best placement of all of them at once.

Served patterns are matched with RE2 (linear time): they come from whatever server the agent talks to.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from mcp_hazard.agents.leaves import flat_view
from mcp_hazard.agents.normalise import similarity
from mcp_hazard.agents.prose import prose_words
from mcp_hazard.scenario.patterns import pattern_problem, search

UNPLACED = -2.0  # a planned argument the tool has no property for
MISSING_REQUIRED = -1.5  # a required property the plan cannot fill (and that has no constant)
BROKEN = -2.0  # a value that breaks a documented pattern, enum, constant or type

_EXAMPLE = re.compile(r"[A-Za-z0-9]+(?:[-/:.][A-Za-z0-9]+)+|[A-Za-z]*\d[A-Za-z0-9]*")
_TEMPLATES = {
    "YYYY-MM-DD": r"\d{4}-\d{2}-\d{2}",
    "DD/MM/YYYY": r"\d{2}/\d{2}/\d{4}",
    "MM/DD/YYYY": r"\d{2}/\d{2}/\d{4}",
    "HH:MM": r"\d{1,2}:\d{2}",
    "YYYY-MM": r"\d{4}-\d{2}",
}


def fit_value(prop: dict[str, Any], value: Any) -> Any:
    """A value in the form a schema property documents: text for a string, a number for a number, a date format."""
    kind = prop.get("type")
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind in ("number", "integer") and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if kind == "integer" or (number.is_integer() and "." not in value) else number
    documented = f"{prop.get('pattern', '')} {prop.get('description', '')}"
    if isinstance(value, str) and ("DD/MM/YYYY" in documented or r"\d{2}/\d{2}/\d{4}" in documented):
        return reformat_date(value, "%d/%m/%Y") or value
    return value


def reformat_date(value: Any, fmt: str) -> str | None:
    try:
        return dt.date.fromisoformat(str(value)[:10]).strftime(fmt)
    except ValueError:
        return None


def _shape(text: str) -> str:
    """`MSG-88213` -> `AAA-99999`: what an identifier looks like, whatever it says."""
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"[0-9]", "9", text)))


def _type_fit(kind: Any, value: Any) -> float:
    if not isinstance(kind, str):
        return 0.0
    if isinstance(value, bool):
        return 0.2 if kind == "boolean" else BROKEN
    if isinstance(value, int | float):
        return 0.2 if kind in ("number", "integer") else (0.0 if kind == "string" else BROKEN)
    if isinstance(value, str):
        if kind == "string":
            return 0.2
        if kind in ("number", "integer"):
            return 0.0 if re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", value) else BROKEN
        return BROKEN
    if isinstance(value, list):
        return 0.5 if kind == "array" else BROKEN
    if isinstance(value, dict):
        return 0.2 if kind == "object" else BROKEN
    return 0.0


def _pattern_fit(pattern: Any, value: Any) -> float:
    """Served patterns come from whatever server the agent talks to: matched with RE2 (linear time), and a pattern
    RE2 cannot compile says nothing either way."""
    if not isinstance(pattern, str) or not isinstance(value, str) or pattern_problem(pattern):
        return 0.0
    return 1.5 if search(pattern, value) else BROKEN


def _documented_example(description: str, value: Any) -> float:
    """A value shaped like an example the description gives (`MSG-88213` for "such as MSG-10000"), written in a
    documented template (`YYYY-MM-DD`), or named outright by the description (an office it lists)."""
    if not isinstance(value, str) or not value.strip() or not description:
        return 0.0
    score = 0.0
    for template, regex in _TEMPLATES.items():
        if template in description and re.fullmatch(regex, value):
            score = max(score, 0.6)
    shape = _shape(value)
    if any(_shape(example) == shape for example in _EXAMPLE.findall(description)) and re.search(r"\d", value):
        score = max(score, 1.0)
    if len(value) >= 3 and re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", description.lower()):
        score = max(score, 0.7)
    return score


def value_fit(prop: dict[str, Any], value: Any, tool_description: str = "") -> float:
    """How well one planned value fits one documented property, from the property alone: type, constant, enum,
    pattern (of the value or of each item), date format and documented examples. Negative when it breaks one."""
    value = fit_value(prop, value)
    score = _type_fit(prop.get("type"), value)
    if "const" in prop:
        score += 1.0 if value == prop["const"] else BROKEN
    if isinstance(prop.get("enum"), list):
        score += 1.5 if value in prop["enum"] else BROKEN
    score += _pattern_fit(prop.get("pattern"), value)
    items = prop.get("items")
    if isinstance(items, dict) and isinstance(value, list) and value:
        fits = [value_fit(items, item) for item in value]
        score += min(fits)
    if prop.get("format") == "date" and isinstance(value, str):
        score += 0.5 if reformat_date(value, "%Y-%m-%d") == value[:10] and len(value) == 10 else BROKEN
    description = str(prop.get("description", ""))
    score += max(_documented_example(description, value), 0.5 * _documented_example(tool_description, value))
    return score


def name_affinity(key: str, name: str, prop: dict[str, Any]) -> float:
    """How well our argument name fits a property by words: its served name, and its description (which keeps the
    meaning when the name is a token)."""
    told = prose_words(str(prop.get("description", "")))
    mine = prose_words(key)
    return similarity(key, name) + 0.8 * len(mine & told) / max(len(mine), 1)


def _pair_scores(props: dict[str, Any], arguments: dict[str, Any], tool_description: str) -> list[list[float]]:
    return [
        [
            name_affinity(key, name, prop if isinstance(prop, dict) else {})
            + value_fit(prop if isinstance(prop, dict) else {}, value, tool_description)
            for name, prop in props.items()
        ]
        for key, value in arguments.items()
    ]


def best_assignment(scores: list[list[float]]) -> tuple[float, list[int | None]]:
    """The assignment of arguments (rows) to distinct properties (columns) with the highest total, an argument
    left without a property costing `UNPLACED`. Exact search: plan steps have a handful of arguments. Ties keep
    the earliest choice in listing order."""
    columns = len(scores[0]) if scores else 0
    memo: dict[tuple[int, int], tuple[float, list[int | None]]] = {}

    def solve(row: int, used: int) -> tuple[float, list[int | None]]:
        if row == len(scores):
            return 0.0, []
        key = (row, used)
        if key in memo:
            return memo[key]
        rest, tail = solve(row + 1, used)
        best: tuple[float, list[int | None]] = (UNPLACED + rest, [None, *tail])
        for column in range(columns):
            if used & (1 << column):
                continue
            rest, tail = solve(row + 1, used | (1 << column))
            total = scores[row][column] + rest
            if total > best[0] + 1e-9:
                best = (total, [column, *tail])
        memo[key] = best
        return best

    return solve(0, 0)


def argument_fit(schema: dict[str, Any], arguments: dict[str, Any], tool_description: str = "") -> float:
    """How well the planned call fits a tool's input schema, per planned argument: the best placement of every
    argument, less what cannot be placed and what the tool requires that the plan cannot give."""
    flat, _leaves = flat_view(schema, arguments)
    props: dict[str, Any] = dict(flat.get("properties") or {})
    names = list(props)
    total, columns = best_assignment(_pair_scores(props, arguments, tool_description)) if arguments else (0.0, [])
    filled = {names[c] for c in columns if c is not None}
    for name in flat.get("required") or []:
        prop = props.get(name)
        if name not in filled and not (isinstance(prop, dict) and ("const" in prop or "default" in prop)):
            total += MISSING_REQUIRED
    return total / max(len(arguments), 1)

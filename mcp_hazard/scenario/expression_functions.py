"""The fixed list of pure functions an expression may call (`round`, `sort_by`, `add_days`, `scramble`, ...).

Each function gets the evaluation's budget first (expression_budget.py) and charges it for what it builds and walks
before it does so: the text of a list, a joined text, a sorted copy, the comparisons of a sort. Each also checks its
input and bounds its own work (digits, dates), so a scenario file from a stranger cannot make one run away.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Callable, Mapping
from typing import Any

from mcp_hazard.scenario.expression_budget import Budget, ExpressionError, brief, json_text

__all__ = ["FUNCTIONS", "ExpressionError", "text_of"]


def _date(value: Any) -> dt.date:
    if not isinstance(value, str):
        raise ExpressionError(f"expected a date string YYYY-MM-DD, got {brief(value)}")
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        raise ExpressionError(f"expected a date string YYYY-MM-DD, got {brief(value)}") from None


def _add_days(budget: Budget, day: Any, days: Any) -> str:
    return (_date(day) + dt.timedelta(days=int(days))).isoformat()


def _days_between(budget: Budget, start: Any, end: Any) -> int:
    return (_date(end) - _date(start)).days


def _weekday(budget: Budget, day: Any) -> str:
    return _date(day).strftime("%A")


def _round(budget: Budget, value: Any, digits: Any = 0) -> Any:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ExpressionError(f"round() needs a number, got {brief(value)}")
    return round(value, _digits(digits, -20)) if digits else round(value)


def _get(container: Any, key: Any, default: Any = None) -> Any:
    if isinstance(container, Mapping):
        return container.get(key, default)
    if isinstance(container, list) and isinstance(key, int) and -len(container) <= key < len(container):
        return container[key]
    return default


def _seq(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        return list(value)
    raise ExpressionError(f"expected a list, got {brief(value)}")


def text_of(value: Any, budget: Budget) -> str:
    """The text form (docs/scenario-format.md 4.1): text as is, null empty, numbers without a spare `.0`, lists and
    mappings as JSON; a text made here is charged to `budget`."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else str(value)
    else:
        return json_text(value, budget)
    budget.spend(len(text) + 1, "a number's text")
    return text


def _text_function(change: Callable[[str], str], growth: int) -> Callable[[Budget, Any], str]:
    """lower/upper/strip: the text form changed; `growth` bounds how much longer it can get ('ß'.upper() is 'SS')."""

    def apply(budget: Budget, value: Any) -> str:
        text = text_of(value, budget)
        budget.room(growth * len(text) + 1, "a changed text")
        changed = change(text)
        budget.spend(len(changed) + 1, "a changed text")
        return changed

    return apply


def _join(budget: Budget, separator: Any, items: Any) -> str:
    if isinstance(separator, list | dict):
        raise ExpressionError(f"join() needs a text separator, got {brief(separator)}")
    glue = str(separator)
    texts = [text_of(item, budget) for item in _seq(items)]
    total = sum(map(len, texts)) + len(glue) * max(len(texts) - 1, 0) + 1
    budget.room(total, "a joined text")
    budget.left -= total
    return glue.join(texts)


def _fixed(budget: Budget, value: Any, digits: Any = 2) -> str:
    text = f"{float(value):.{_digits(digits, 0)}f}"
    budget.spend(len(text) + 1, "fixed()")
    return text


def _digits(value: Any, lowest: int) -> int:
    """Decimal places for round/fixed, bounded so no expression can ask for a gigabyte of digits."""
    number = int(value)
    if not lowest <= number <= 20:
        raise ExpressionError(f"number of digits must be between {lowest} and 20, got {number}")
    return number


def _number(convert: Callable[[Any], Any]) -> Callable[[Budget, Any], Any]:
    """int/float: reading a text costs its length."""

    def apply(budget: Budget, value: Any) -> Any:
        if isinstance(value, str):
            budget.spend(len(value), "reading a number")
        return convert(value)

    return apply


def _sort_key(value: Any, budget: Budget) -> tuple[int, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value)
    return (1, text_of(value, budget))


def _keys(budget: Budget, items: list[Any], field: Any, what: str, merges: bool) -> list[tuple[int, Any]]:
    """Each item's sort key (its field `field`, or itself when `field` is None), with the comparisons a sort (every
    merge level) or a scan (once) may make charged: each key's size at each level."""
    keys = [_sort_key(item if field is None else _get(item, field), budget) for item in items]
    levels = (len(keys) - 1).bit_length() + 1 if merges and keys else 1  # ceil(log2 n) + 1
    budget.spend(levels * sum(1 if kind == 0 else len(key) + 1 for kind, key in keys), what)
    return keys


def _listed(budget: Budget, items: list[Any], what: str) -> list[Any]:
    """A new list of existing values, charged as built."""
    size, height = budget.sizes(items)
    return budget.built(items, size + 1, height + 1, what)


def _sorted(budget: Budget, items: Any, field: Any = None) -> list[Any]:
    values = _seq(items)
    keys = _keys(budget, values, field, "sorting", merges=True)
    order = sorted(range(len(values)), key=keys.__getitem__)
    return _listed(budget, [values[i] for i in order], "a sorted list")


def _sort_by(budget: Budget, items: Any, key: Any) -> list[Any]:
    return _sorted(budget, items, key)


def _min_by(budget: Budget, items: Any, key: Any) -> Any:
    values = _seq(items)
    keys = _keys(budget, values, key, "min_by()", merges=False)
    return values[min(range(len(values)), key=keys.__getitem__)] if values else None  # on ties the first


def _max_by(budget: Budget, items: Any, key: Any) -> Any:
    values = _seq(items)
    keys = _keys(budget, values, key, "max_by()", merges=False)
    return values[max(reversed(range(len(values))), key=keys.__getitem__)] if values else None  # on ties the last


def _pluck(budget: Budget, items: Any, key: Any) -> list[Any]:
    return _listed(budget, [_get(item, key) for item in _seq(items)], "pluck()")


def _where(budget: Budget, items: Any, key: Any, value: Any) -> list[Any]:
    values = _seq(items)
    budget.spend(budget.size(values) + budget.size(value), "where()")  # each comparison walks at most the field
    return _listed(budget, [item for item in values if _get(item, key) == value], "where()")


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    """min/max of one list or of several arguments: comparing walks at most every item once."""

    def apply(budget: Budget, *values: Any) -> Any:
        items = _seq(values[0]) if len(values) == 1 else list(values)
        budget.spend(budget.size(items), f"{pick.__name__}()")
        return pick(items)

    return apply


def _sum(budget: Budget, items: Any) -> Any:
    values = _seq(items)
    budget.spend(len(values), "sum()")
    return sum(values)


def _len(budget: Budget, value: Any) -> int:
    if isinstance(value, str | list | Mapping):
        return len(value)
    raise ExpressionError(f"len() of {brief(value)}")


def _scramble(budget: Budget, *values: Any) -> int:
    """A stable pseudo-random whole number in [0, 2**56) drawn from the values (their JSON text through blake2b): the
    same in every process and on every machine, so a behaviour can return a random-looking value deterministically.
    """
    text = json_text(list(values), budget, sort_keys=True, ascii_only=True)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "big")


def _plain(function: Callable[..., Any]) -> Callable[..., Any]:
    """A function of numbers, whose work does not grow with its input."""

    def apply(budget: Budget, *values: Any) -> Any:
        return function(*values)

    return apply


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": _plain(abs),
    "round": _round,
    "min": _extreme(min),
    "max": _extreme(max),
    "sum": _sum,
    "len": _len,
    "str": lambda budget, value: text_of(value, budget),
    "int": _number(lambda value: int(float(value)) if isinstance(value, str) else int(value)),
    "float": _number(float),
    "fixed": _fixed,
    "lower": _text_function(str.lower, 3),
    "upper": _text_function(str.upper, 3),
    "strip": _text_function(str.strip, 1),
    "join": _join,
    "get": lambda budget, *values: _get(*values),
    "sorted": lambda budget, items: _sorted(budget, items),
    "sort_by": _sort_by,
    "min_by": _min_by,
    "max_by": _max_by,
    "pluck": _pluck,
    "where": _where,
    "add_days": _add_days,
    "days_between": _days_between,
    "weekday": _weekday,
    "floor": _plain(math.floor),
    "scramble": _scramble,
    "ceil": _plain(math.ceil),
}
"""Each takes the evaluation's budget, then its arguments (positional only)."""

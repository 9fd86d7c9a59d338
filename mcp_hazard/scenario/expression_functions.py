"""The fixed list of pure functions an expression may call (`round`, `sort_by`, `add_days`, `scramble`, ...), and
the error every part of the expression language raises.

Each function checks its input and bounds its work (digits, list sizes), so a scenario file from a stranger cannot
make one run away; the interpreter (expressions.py) bounds what they return.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any


class ExpressionError(ValueError):
    """An expression cannot be parsed or evaluated; the message says which part and why."""


def _date(value: Any) -> dt.date:
    if not isinstance(value, str):
        raise ExpressionError(f"expected a date string YYYY-MM-DD, got {value!r}")
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        raise ExpressionError(f"expected a date string YYYY-MM-DD, got {value!r}") from None


def _add_days(day: Any, days: Any) -> str:
    return (_date(day) + dt.timedelta(days=int(days))).isoformat()


def _days_between(start: Any, end: Any) -> int:
    return (_date(end) - _date(start)).days


def _weekday(day: Any) -> str:
    return _date(day).strftime("%A")


def _round(value: Any, digits: Any = 0) -> Any:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ExpressionError(f"round() needs a number, got {value!r}")
    return round(value, _digits(digits, -20)) if digits else round(value)


def _get(container: Any, key: Any, default: Any = None) -> Any:
    if isinstance(container, Mapping):
        return container.get(key, default)
    if isinstance(container, list) and isinstance(key, int) and -len(container) <= key < len(container):
        return container[key]
    return default


def _join(separator: Any, items: Any) -> str:
    return str(separator).join(to_text(item) for item in _seq(items))


def _seq(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        return list(value)
    raise ExpressionError(f"expected a list, got {value!r}")


def to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number_text(value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _number_text(value: float | int) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _fixed(value: Any, digits: Any = 2) -> str:
    return f"{float(value):.{_digits(digits, 0)}f}"


def _digits(value: Any, lowest: int) -> int:
    """Decimal places for round/fixed, bounded so no expression can ask for a gigabyte of digits."""
    number = int(value)
    if not lowest <= number <= 20:
        raise ExpressionError(f"number of digits must be between {lowest} and 20, got {number}")
    return number


def _sort_by(items: Any, key: Any) -> list[Any]:
    return sorted(_seq(items), key=lambda item: _sort_key(_get(item, key)))


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value)
    return (1, to_text(value))


def _min_by(items: Any, key: Any) -> Any:
    ordered = _sort_by(items, key)
    return ordered[0] if ordered else None


def _max_by(items: Any, key: Any) -> Any:
    ordered = _sort_by(items, key)
    return ordered[-1] if ordered else None


def _pluck(items: Any, key: Any) -> list[Any]:
    return [_get(item, key) for item in _seq(items)]


def _where(items: Any, key: Any, value: Any) -> list[Any]:
    return [item for item in _seq(items) if _get(item, key) == value]


def _scramble(*values: Any) -> int:
    """A stable pseudo-random whole number in [0, 2**56) drawn from the values (their JSON text through blake2b): the
    same in every process and on every machine, so a behaviour can return a random-looking value deterministically.
    """
    text = json.dumps(list(values), sort_keys=True, default=str, ensure_ascii=False)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "big")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": _round,
    "min": lambda *a: min(_seq(a[0]) if len(a) == 1 else a),
    "max": lambda *a: max(_seq(a[0]) if len(a) == 1 else a),
    "sum": lambda items: sum(_seq(items)),
    "len": lambda value: len(value) if isinstance(value, str | list | Mapping) else _fail(f"len() of {value!r}"),
    "str": to_text,
    "int": lambda value: int(float(value)) if isinstance(value, str) else int(value),
    "float": float,
    "fixed": _fixed,
    "lower": lambda value: to_text(value).lower(),
    "upper": lambda value: to_text(value).upper(),
    "strip": lambda value: to_text(value).strip(),
    "join": _join,
    "get": _get,
    "sorted": lambda items: sorted(_seq(items), key=_sort_key),
    "sort_by": _sort_by,
    "min_by": _min_by,
    "max_by": _max_by,
    "pluck": _pluck,
    "where": _where,
    "add_days": _add_days,
    "days_between": _days_between,
    "weekday": _weekday,
    "floor": math.floor,
    "scramble": _scramble,
    "ceil": math.ceil,
}


def _fail(message: str) -> Any:
    raise ExpressionError(message)

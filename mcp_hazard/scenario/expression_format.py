"""Text formatting with `%` (`'%05.2f' % x`, `'%(city)s' % m`), bounded before anything is formatted.

Python makes the whole text of `'%0999999999d' % 1` (a gigabyte) before anything can look at its length, so the
format is read here first: every conversion must be one this reader understands, its width and precision are at most
MAX_FORMAT_WIDTH, a list or mapping is not formatted as text (Python's form of it is not JSON, and a shared one can be
huge: `str()` gives the JSON text), and the most text the format could make is charged to the budget. Only then does
Python format it, with its own semantics.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mcp_hazard.scenario.expression_budget import Budget, ExpressionError, brief

MAX_FORMAT_WIDTH = 1_000  # the largest width and precision of one conversion

_SPEC = re.compile(
    r"%(?:\((?P<key>[^()]*)\))?(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?[hlL]?(?P<kind>.?)",
    re.DOTALL,
)
_KINDS = frozenset("diouxXeEfFgGcrsa%")
_FLOAT_CHARS = 330  # the integer part of the largest float (309 digits), a sign, a point, an exponent


def format_text(template: str, argument: Any, budget: Budget) -> str:
    """`template % argument`, refused before formatting when it is not bounded (module docstring)."""
    most = len(template)
    position = template.find("%")
    while position != -1:
        spec = _SPEC.match(template, position)
        assert spec is not None  # every group is optional
        kind = spec["kind"]
        if kind not in _KINDS:
            raise ExpressionError(f"unsupported format {spec[0]!r} in {brief(template)}")
        width, precision = _number(spec["width"]), _number(spec["precision"])
        if kind == "%":
            most += width
        else:
            value = argument if spec["key"] is None else _field(argument, spec["key"])
            most += max(width, _natural(value, kind, precision))
        position = template.find("%", spec.end())
    budget.room(most + 1, "a formatted text")
    text = template % argument
    budget.left -= len(text) + 1
    return text


def _number(digits: str | None) -> int:
    if digits == "*":
        raise ExpressionError("'*' widths and precisions are not allowed in a format")
    number = int(digits) if digits else 0
    if number > MAX_FORMAT_WIDTH:
        raise ExpressionError(f"format width or precision {number} is over the limit of {MAX_FORMAT_WIDTH}")
    return number


def _field(argument: Any, key: str) -> Any:
    if not isinstance(argument, Mapping):
        raise ExpressionError(f"a format with '%({key})' needs a mapping, got {brief(argument)}")
    if key not in argument:
        raise ExpressionError(f"no field {key!r} for the format")
    return argument[key]


def _natural(value: Any, kind: str, precision: int) -> int:
    """The most characters one conversion of `value` can make before padding to its width."""
    if isinstance(value, list | dict):
        if kind in "rsa":
            raise ExpressionError(f"'%{kind}' formats text and numbers, not {brief(value)}; use str() for JSON")
        return 1  # a number conversion refuses a list with a TypeError before making anything
    if kind == "c":
        return 1
    if isinstance(value, str):
        length = len(value) * (10 if kind in "ra" else 1) + 2
    elif isinstance(value, int):
        length = value.bit_length() + 12  # no base writes more digits than binary; a sign, prefix, exponent
    elif isinstance(value, float) and kind in "diouxXc":
        length = 1024 + 4  # the float as a whole number, in binary at worst
    else:
        length = _FLOAT_CHARS
    if kind in "rsa":
        return min(length, precision) if precision else length
    return length + precision + 2

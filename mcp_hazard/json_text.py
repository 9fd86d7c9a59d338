"""JSON text as the standard library writes it, made by orjson wherever that gives the same bytes.

Every tool call writes a trace line and serves its result as indented JSON; with `json.dumps` those two took a
tenth of a call's time. orjson writes the same text for what a call carries (str keys, ints within 64 bits, floats
in fixed notation) at a tenth of the cost. Where the two could differ orjson refuses (a non-str key, a big int, a
lone surrogate, a str subclass, a datetime or dataclass) or writes a float in another form (`1e-05` as `0.00001`,
`1e+16` as `1e16`, NaN as `null`). Such text is rebuilt with `json`, so what lands on disk or reaches the agent does
not depend on which of the two wrote it (tests/test_json_text.py compares them on generated values).
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
_INDENTED = json.JSONEncoder(ensure_ascii=False, indent=2)
_MARKS = bytes(
    ord("0") if 48 <= byte <= 57 or byte in b"+-" else byte if byte == ord("e") else ord(" ") for byte in range(256)
)
"""Each digit and sign as `0`, `e` as itself, anything else as a space: an exponent reads `0e0`."""


def float_forms(text: bytes) -> bool:
    """Whether orjson's text may hold a float written unlike `repr` writes it: with an exponent (a digit, `e`, a sign
    or digit) or in the fixed form it keeps down to 1e-5 (`0.0000`). A string that happens to look like this only
    sends its value down the exact path. `find` rather than `in`: bytes' `in` first tries its operand as an integer,
    which raises and clears a TypeError on every search."""
    if text.find(b"0.0000") >= 0:
        return True
    return text.translate(_MARKS).find(b"0e0") >= 0  # every JSON text has an `e` in a key or two: all at C speed


def compact(value: Any) -> bytes | None:
    """`value` as one line of compact JSON (UTF-8, no escapes beyond JSON's own), or None where only the caller's
    exact path can say what it should be. NaN and infinities are written as `null`, as pydantic's JSON mode does."""
    try:
        text = orjson.dumps(value, option=_STRICT)
    except TypeError:
        return None
    return None if float_forms(text) else text


def indented(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, indent=2)`: how a tool's result is served as text."""
    try:
        text = orjson.dumps(value, option=_STRICT | orjson.OPT_INDENT_2)
    except TypeError:
        return _INDENTED.encode(value)
    # `find`, not `in` (float_forms says why)
    if float_forms(text) or (text.find(b"null") >= 0 and _has_non_finite(value)):
        return _INDENTED.encode(value)
    return text.decode("utf-8")


def _has_non_finite(value: Any) -> bool:
    """Whether a NaN or an infinity hides behind a `null` (json writes `NaN`, `Infinity`); looked for only when the
    text has a null, which few results do."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False

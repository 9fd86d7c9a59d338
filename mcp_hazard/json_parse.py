"""JSON read from files and peers we do not control (traces, reports, lock files, CLI values, servers' and models'
text), where text that `json.loads` cannot turn into values is bad input, not a crash.

Two kinds of such text get past an `except json.JSONDecodeError`: nesting deeper than the interpreter's recursion
limit allows (`[[[[...]]]]`) raises RecursionError, and an integer of more than 4,300 digits raises a plain
ValueError (Python's limit on converting long digit strings). Either ended a command in a traceback. `loads` here
raises `json.JSONDecodeError` for both, as for any other text that is not JSON. The trace readers, which parse every
line of every file, call `decode` themselves, catch `(ValueError, RecursionError)` and say why with `problem`.

JSON text may also spell a lone surrogate (`"\\ud800"`, an escape without its pair): `json.loads` turns it into a
str that cannot be encoded as UTF-8, so a report, a trace or a peer it reaches fails to be written. Text read here
has each lone surrogate replaced by U+FFFD (`loads` does it; the trace readers and the proxy call `repair_surrogates`
themselves, to say so).
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A character no UTF-8 text holds: what `json.loads` makes of an unpaired escape, and Python of a byte that is not
UTF-8 in a file name or a command-line word (surrogateescape)."""


class NotJson(ValueError):
    """`NaN`, `Infinity` or `-Infinity`: Python's json reads them, no other JSON reader does (RFC 8259 has no such
    number), so a report or a page that passed one on could not be read by jq or a browser."""


def refuse_constant(name: str) -> Any:
    raise NotJson(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=refuse_constant)
decode = _DECODER.decode
"""`json.loads` of a str, refusing NaN and the infinities (NotJson): one decoder, made once, as `json.loads` makes
its own only when given no options."""


def problem(exc: ValueError | RecursionError) -> str:
    """Why `json.loads` refused a text, in a few words."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, NotJson):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "a number with too many digits"  # the only other ValueError json.loads raises


def loads(text: str | bytes, *, allow_nan: bool = False) -> Any:
    """`json.loads`, with every refusal of the text raised as `json.JSONDecodeError` (position 0 when json gave
    none); bytes that are not UTF-8 raise UnicodeDecodeError, as with `json.loads`; lone surrogates become U+FFFD,
    and NaN and the infinities are refused (NotJson) unless `allow_nan` (a peer's reply, where one in a field we do
    not read must not cost the whole reply)."""
    try:
        string = text if isinstance(text, str) else text.decode(json.detect_encoding(text), "surrogatepass")
        value = json.loads(string) if allow_nan else decode(string)
    except (json.JSONDecodeError, UnicodeDecodeError):  # bytes that are not UTF-8 stay what they are
        raise
    except (ValueError, RecursionError) as exc:
        raise json.JSONDecodeError(problem(exc), text if isinstance(text, str) else "", 0) from None
    return repair_surrogates(value)[0] if escapes_surrogate(text) else value


def escapes_surrogate(text: str | bytes) -> bool:
    """Whether JSON text may spell a lone surrogate: a `\\ud800` to `\\udfff` escape (paired or not, or after an
    escaped backslash: `repair_surrogates` tells). A plain search for `\\u` first, which most text does not hold."""
    if isinstance(text, bytes):
        return b"\\u" in text and _SURROGATE_ESCAPE_BYTES.search(text) is not None
    return "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None


def repair_surrogates(value: Any) -> tuple[Any, int]:
    """`value` with every lone surrogate (a `\\ud800` escape without its pair) replaced by U+FFFD, and how many strings
    held one. Iterative, in place for containers."""
    if isinstance(value, str):
        fixed, count = LONE_SURROGATE.subn("\ufffd", value)
        return fixed, int(count > 0)
    repaired = 0
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        slots: list[tuple[Any, Any]]
        if isinstance(node, dict):
            for key in [k for k in node if isinstance(k, str) and LONE_SURROGATE.search(k)]:
                node[LONE_SURROGATE.sub("\ufffd", key)] = node.pop(key)
                repaired += 1
            slots = list(node.items())
        elif isinstance(node, list):
            slots = list(enumerate(node))
        else:
            continue
        for slot, item in slots:
            if isinstance(item, str):
                if LONE_SURROGATE.search(item):
                    node[slot] = LONE_SURROGATE.sub("\ufffd", item)
                    repaired += 1
            elif isinstance(item, dict | list):
                stack.append(item)
    return value, repaired

"""JSON read from files and peers we do not control (traces, reports, lock files, CLI values, servers' and models'
text), where text that `json.loads` cannot turn into values is bad input, not a crash.

Two kinds of such text get past an `except json.JSONDecodeError`: nesting deeper than the interpreter's recursion
limit allows (`[[[[...]]]]`) raises RecursionError, and an integer of more than 4,300 digits raises a plain
ValueError (Python's limit on converting long digit strings). Either ended a command in a traceback. `loads` here
raises `json.JSONDecodeError` for both, as for any other text that is not JSON. The trace readers, which parse every
line of every file, call `json.loads` themselves, catch `(ValueError, RecursionError)` and say why with `problem`.
"""

from __future__ import annotations

import json
from typing import Any


def problem(exc: ValueError | RecursionError) -> str:
    """Why `json.loads` refused a text, in a few words."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "a number with too many digits"  # the only other ValueError json.loads raises


def loads(text: str | bytes) -> Any:
    """`json.loads`, with every refusal of the text raised as `json.JSONDecodeError` (position 0 when json gave
    none); bytes that are not UTF-8 raise UnicodeDecodeError, as with `json.loads`."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):  # bytes that are not UTF-8 stay what they are
        raise
    except (ValueError, RecursionError) as exc:
        raise json.JSONDecodeError(problem(exc), text if isinstance(text, str) else "", 0) from None

"""JSON read from files and peers we do not control (traces, reports, lock files, CLI values, servers' and models'
text), where text nested thousands of levels deep is bad input, not a crash.

`json.loads` raises RecursionError, not a ValueError, on text nested deeper than the interpreter's recursion limit
allows, so an `except ValueError` around it let one line like `[[[[...]]]]` end a command in a traceback. `loads`
here raises `json.JSONDecodeError` for it, as for any other text that is not JSON. (The trace readers, which parse
every line of every file, catch RecursionError where they call `json.loads` themselves: NESTED_TOO_DEEPLY is their
message for it.)
"""

from __future__ import annotations

import json
from typing import Any

NESTED_TOO_DEEPLY = "nested too deeply"


def loads(text: str | bytes) -> Any:
    """`json.loads`, with too deep a nesting raised as `json.JSONDecodeError` (position 0)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(NESTED_TOO_DEEPLY, text if isinstance(text, str) else "", 0) from None

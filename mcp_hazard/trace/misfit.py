"""Where a trace leaves the trace format (events.py), asked only after scoring it failed: a field of the wrong
shape (a `condition` that is a list, an `arguments` that is a number) in a trace that was edited, damaged or written
by another program. Every event is checked against its model here, which costs more than scoring the trace, so it
is done only for a trace that could not be scored, to say which line and field to look at.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from mcp_hazard.json_parse import loads
from mcp_hazard.regular_file import read_regular
from mcp_hazard.trace.events import EVENT_TYPES, TraceEvent


@cache
def _adapter() -> TypeAdapter[Any]:
    return TypeAdapter(TraceEvent)


def misfit(path: str) -> str | None:
    """`PATH:LINE: EVENT: FIELD: what is wrong` for the first event of the trace at `path` whose fields do not fit
    its model; None when every event fits (or the file cannot be read again). Fields the model does not know are
    passed over: a newer trace may carry more."""
    try:
        lines = read_regular(path).split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(lines, start=1):
        try:
            event = loads(line)
        except (ValueError, RecursionError):
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        if type(kind) is not str or kind not in EVENT_TYPES:
            continue
        try:
            _adapter().validate_python(event)
        except ValidationError as exc:
            for error in exc.errors():
                if error["type"] != "extra_forbidden":
                    field = ".".join(str(part) for part in error["loc"][1:]) or "(the event)"
                    return f"{path}:{number}: {kind}: {field}: {error['msg']}"
        except RecursionError:
            return f"{path}:{number}: {kind}: nested too deeply"
    return None

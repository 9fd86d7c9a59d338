"""What a stdio server writes, as frames the proxy can act on: each line bounded in size (lines.py) and nesting, parsed
without a traceback whatever it holds, and checked for the JSON-RPC shape the proxy relies on.

A server is a program someone else wrote, and it may be broken or hostile: a line of 50 MB, a truncated line, bytes
that are not UTF-8, a result nested 5,000 deep, an answer with no result. Such a line is refused with one log line
naming why, and when the id of the request it answers can still be read (at its start, as most servers write it, or
at its end, where JavaScript servers put it), that request is answered at once with a JSON-RPC error saying so,
instead of waiting for the upstream timeout. A lone surrogate escape (`\\ud800`) is not refused: the text is kept with
U+FFFD in its place, and a log line says so (it could not be written to a trace or to the client as UTF-8).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mcp_hazard.json_parse import escapes_surrogate, refuse_constant, repair_surrogates
from mcp_hazard.logs import LogBudget, log
from mcp_hazard.proxy.lines import Lines, Oversize
from mcp_hazard.server.frames import MAX_FRAME_BYTES, MAX_FRAME_DEPTH, too_deep

REFUSED_CODE = -32603
"""The code of the error a refused answer becomes (JSON-RPC's internal error, as for a lost connection)."""

_HEAD_ID = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18})\s*[,}]')
_TAIL_ID = re.compile(rb'[{,]\s*"id"\s*:\s*(-?\d{1,18})\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


@dataclass(frozen=True)
class Refused:
    """A line the proxy will not act on: why (one line), and the request id it answers when that could be read."""

    reason: str
    id: int | None = None

    def answer(self) -> dict[str, Any] | None:
        """The error that answers the request in its place (None: no id to answer)."""
        if self.id is None:
            return None
        message = f"the upstream server's answer was refused: {self.reason}"
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": REFUSED_CODE, "message": message}}


def _sniffed_id(head: bytes, tail: bytes) -> int | None:
    """The request id a damaged line answers, where it cannot be mistaken: the first key of the line's object (after
    `jsonrpc`), or the last one before its final brace."""
    found = _HEAD_ID.match(head) or _TAIL_ID.search(tail)
    return int(found.group(1)) if found else None


def load_bounded(line: bytes) -> Any:
    """JSON text parsed within the proxy's limits (depth, no NaN), lone surrogates repaired; ValueError says why not,
    in one line. Also for cassette lines."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg}: column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_FRAME_DEPTH} levels") from None
    except ValueError as exc:  # NaN, Infinity
        raise ValueError(f"not JSON ({exc})") from None
    if line.count(b"{") + line.count(b"[") > MAX_FRAME_DEPTH and too_deep(value):
        raise ValueError(f"nested deeper than {MAX_FRAME_DEPTH} levels")
    if escapes_surrogate(line):
        value, repaired = repair_surrogates(value)
        if repaired:
            log.warning("lone surrogates (\\ud800 to \\udfff) replaced with U+FFFD", strings=repaired,
                        id=value.get("id") if isinstance(value, dict) else None)  # fmt: skip
    return value


def _shape_problem(frame: dict[str, Any]) -> str | None:
    """What keeps a parsed frame from being a request, notification or answer the proxy can pass on."""
    if "method" in frame:
        return None if isinstance(frame["method"], str) else "a frame whose method is not text"
    if not isinstance(frame.get("id"), int | str) or isinstance(frame.get("id"), bool):
        return "an answer without a request id"
    if ("result" in frame) == ("error" in frame):
        return "an answer with both or neither of result and error"
    if "result" in frame and not isinstance(frame["result"], dict):
        return "an answer whose result is not an object"
    error = frame.get("error")
    if "error" in frame and not (
        isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str)
    ):
        return "an answer whose error has no integer code and text message"
    return None


def parse_server_line(line: bytes | Oversize) -> dict[str, Any] | Refused:
    """One line the server wrote: the frame, or why it is refused (with the id it answers, when readable)."""
    if isinstance(line, Oversize):
        reason = f"a line of {line.size:,} bytes, over the limit of {MAX_FRAME_BYTES:,}"
        return Refused(reason, _sniffed_id(line.head, line.tail))
    try:
        frame = load_bounded(line)
    except ValueError as exc:
        return Refused(f"a line that is {exc}", _sniffed_id(line[:256], line[-256:]))
    if not isinstance(frame, dict):
        return Refused("a line that is not one JSON object")
    problem = _shape_problem(frame)
    if problem is not None:
        up = frame.get("id") if "method" not in frame else None
        return Refused(problem, up if type(up) is int else None)
    return frame


FAULT_LINES = 20


def fault_budget() -> LogBudget:
    """The log lines one server's faults may take."""
    return LogBudget(FAULT_LINES, f"the upstream server's next faults go unlogged after {FAULT_LINES} lines")


class ServerFrames:
    """The server's frames, one at a time: refused lines are logged (one line each, within the budget) and, when they
    answer a request whose id could be read, come back as the error that answers it."""

    def __init__(self, lines: Lines, label: str, budget: LogBudget) -> None:
        self.lines = lines
        self.label = label
        self.budget = budget
        self.accepted = False
        self.early: str | None = None  # why the first line refused before any accepted frame was refused

    async def next(self) -> dict[str, Any] | None:
        """The next frame (a refused answer as its error); None when the server's stdout closes."""
        while True:
            line = await self.lines.next()
            if line is None:
                return None
            if not isinstance(line, Oversize) and not line.strip():
                continue
            frame = parse_server_line(line)
            if not isinstance(frame, Refused):
                self.accepted = True
                return frame
            if not self.accepted and self.early is None:
                self.early = frame.reason
            self.budget.warning("the upstream server wrote a line the proxy refused", upstream=self.label,
                                reason=frame.reason, answered=frame.id)  # fmt: skip
            answer = frame.answer()
            if answer is not None:
                return answer

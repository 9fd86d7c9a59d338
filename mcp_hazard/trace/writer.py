"""Append trace events to a JSONL file, one line per event written at once, so a killed server leaves a valid prefix.

A line is written the moment its event happens, on every call, so writing it must cost little next to the call
itself: the event is laid out in its model's field order straight from the fields given (`_Layout`), serialised by
orjson and written with one unbuffered `write`. Anything that path cannot vouch for (an unknown field, a value that
only pydantic knows how to turn into JSON, a text long enough to need cutting) goes through the event's pydantic
model as before, so the line is the same whichever way it was made (tests/trace/test_writer.py checks both ways).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import BaseModel

from mcp_hazard.json_text import float_forms
from mcp_hazard.trace.events import ToolCalled

MAX_TRACE_TEXT = 16_384
"""Longest text value kept whole in a trace; longer ones are cut and marked, so a 1 MB argument stays readable."""


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TRACE_TEXT:
        return value[:MAX_TRACE_TEXT] + f"...[{len(value) - MAX_TRACE_TEXT} more characters]"
    if isinstance(value, list):
        return [_clip(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _clip(item) for key, item in value.items()}
    return value


_second: tuple[str, str] = ("", "")  # the epoch second's digits, and that second as `YYYY-MM-DDTHH:MM:SS.`


def utc_now() -> str:
    """UTC time to the microsecond, ISO 8601 with `Z`. Timestamps are recorded, never used to decide anything
    (DESIGN.md section 4). The date and time of day are formatted once per second; the microseconds are cut from
    the clock's decimal digits, which in place takes about half as long as dividing and formatting the number."""
    global _second
    digits = str(time.time_ns())
    if len(digits) < 10:  # within a second of 1970: a test's clock
        digits = digits.rjust(10, "0")
    seconds = digits[:-9]
    cached = _second
    if cached[0] != seconds:  # one tuple, replaced whole: a writer in another thread never sees half of it
        cached = _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(int(seconds))))
    return f"{cached[1]}{digits[-9:-3]}Z"


class _Layout:
    """An event model's fields in the order its `model_dump` writes them, with their defaults and exclusions."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.type = model.model_fields["type"].default
        self.fields: list[tuple[str, bool, Any, Any, Any]] = []  # name, required, default, factory, exclude_if
        for name, info in model.model_fields.items():
            if name in ("seq", "ts", "type"):
                continue
            self.fields.append((name, info.is_required(), info.default, info.default_factory, info.exclude_if))
        self.names = frozenset(name for name, *_ in self.fields)
        self.order = tuple(name for name, *_ in self.fields)
        self.excludable = [(name, exclude_if) for name, _, _, _, exclude_if in self.fields if exclude_if is not None]

    def data(self, seq: int, ts: str, given: dict[str, Any]) -> dict[str, Any] | None:
        """The event as `model_dump` would lay it out, or None when only the model can judge the fields."""
        data: dict[str, Any]
        if tuple(given) == self.order:  # every field, in order: what the hot callers pass
            data = {"seq": seq, "ts": ts, "type": self.type, **given}
            for name, exclude_if in self.excludable:
                if exclude_if(data[name]):
                    del data[name]
            return data
        if not given.keys() <= self.names:
            return None
        data = {"seq": seq, "ts": ts, "type": self.type}
        for name, required, default, factory, exclude_if in self.fields:
            if name in given:
                value = given[name]
            elif required:
                return None
            else:
                value = factory() if factory is not None else default
            if exclude_if is not None and exclude_if(value):
                continue
            data[name] = value
        return data


_layouts: dict[type[BaseModel], _Layout | None] = {}
_LINE = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
_LINE |= orjson.OPT_APPEND_NEWLINE


def _layout(model: type[BaseModel]) -> _Layout | None:
    """Events whose every field holds plain JSON take the direct path; one with a nested model (`episode_started`,
    once per episode) goes through pydantic."""
    if model not in _layouts:
        plain = "type" in model.model_fields and not any(
            isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
            for info in model.model_fields.values()
        )
        _layouts[model] = _Layout(model) if plain else None
    return _layouts[model]


def event_line(event_type: type[BaseModel], seq: int, ts: str, fields: dict[str, Any]) -> bytes:
    """One trace line (with its newline) for an event; the same bytes whichever path makes it. The direct path is
    orjson on plain values (json_text.py says when its text could differ from json's; then the model writes it)."""
    layout = _layouts[event_type] if event_type in _layouts else _layout(event_type)
    if layout is not None:
        data = layout.data(seq, ts, fields)
        if data is not None:
            try:
                text = orjson.dumps(data, option=_LINE)
            except TypeError:
                pass
            else:
                if len(text) <= MAX_TRACE_TEXT and not float_forms(text):  # no text in it can need cutting
                    return text
    record = event_type(seq=seq, ts=ts, **{key: _clip(value) for key, value in fields.items()})
    dumped = json.dumps(record.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
    return dumped.encode("utf-8") + b"\n"


class TraceWriter:
    """Owns one episode's trace file. Thread-safe, since stdio and HTTP may write from different tasks.

    The file is created on the first event (an episode nobody connected to leaves no file) and stays open until
    `close()`. An event written after `close()` (a call refused after the episode ended) reopens the file in
    append mode for that one line, so nothing the agent does is lost.

    An existing trace is never appended to or overwritten: the file is created exclusively. The registry refuses a
    taken id before an episode exists; should another process create the same file in between, this episode writes
    to the first free `NAME-2.jsonl`, `NAME-3.jsonl`... instead (and `path` says where).
    """

    def __init__(self, path: Path | None) -> None:
        """`path=None` keeps events in memory only (`events`), for in-process checks such as solvability."""
        self.path = path
        self.events: list[dict[str, Any]] = []
        self._file: IO[bytes] | None = None
        self._closed = False
        self._seq = 0
        self._created = False
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed

    def _line(self, line: bytes) -> None:
        if self._file is None:
            assert self.path is not None
            handle = self.path.open("ab", buffering=0) if self._created else self._claim(self.path)
            if self._closed:
                with handle:
                    _write_all(handle, line)
                return
            self._file = handle
        _write_all(self._file, line)

    def _claim(self, path: Path) -> IO[bytes]:
        """Create this episode's file, never opening one that exists (a trace from before a restart). The folder is
        made only when missing: one system call fewer for every episode after the first."""
        for number in range(1, 10_000):
            candidate = path if number == 1 else path.with_name(f"{path.stem}-{number}{path.suffix}")
            try:
                handle = _create(candidate)
            except FileExistsError:
                continue
            self.path = candidate
            self._created = True
            return handle
        raise FileExistsError(f"{path} and 9,998 numbered alternatives already exist")

    def write(self, event_type: type[BaseModel], **fields: Any) -> None:
        with self._lock:
            line = event_line(event_type, self._seq, utc_now(), fields)
            if self._file is not None:  # the episode's open file: every event after the first
                _write_all(self._file, line)
            elif self.path is None:
                self.events.append(orjson.loads(line))
            else:
                self._line(line)
            self._seq += 1

    def tool_called(
        self, tool: str, slot: int, arguments: Any, outcome: str, inner_arguments: Any, result: Any,
        text: str | None, error: str | None, hazards: list[int], duration_ms: float,
    ) -> None:  # fmt: skip
        """`tool_called`, the event of every call: laid out field by field in `ToolCalled`'s order (a test holds the
        two together), without the general layout's lookups. Whatever the direct path cannot vouch for, and any
        event of an episode whose file is not open yet, goes the general way."""
        with self._lock:
            handle = self._file
            if handle is not None:
                data: dict[str, Any] = {
                    "seq": self._seq, "ts": utc_now(), "type": "tool_called", "tool": tool, "slot": slot,
                    "arguments": arguments, "outcome": outcome,
                }  # fmt: skip
                if inner_arguments is not None:
                    data["inner_arguments"] = inner_arguments
                data["result"] = result
                data["text"] = text
                data["error"] = error
                data["hazards"] = hazards
                data["duration_ms"] = duration_ms
                try:
                    line = orjson.dumps(data, option=_LINE)
                except TypeError:
                    line = b""
                if line and len(line) <= MAX_TRACE_TEXT and not float_forms(line):
                    _write_all(handle, line)
                    self._seq += 1
                    return
        self.write(
            ToolCalled, tool=tool, slot=slot, arguments=arguments, outcome=outcome, inner_arguments=inner_arguments,
            result=result, text=text, error=error, hazards=hazards, duration_ms=duration_ms,
        )  # fmt: skip

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._file is not None:
                self._file.close()
                self._file = None


def _create(path: Path) -> IO[bytes]:
    try:
        return path.open("xb", buffering=0)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("xb", buffering=0)


def _write_all(handle: IO[bytes], line: bytes) -> None:
    """An unbuffered write hands the whole line to the kernel at once (no flush to forget); a short write, which a
    regular file gives only when the disk is full, is finished or raises."""
    written = handle.write(line)
    if written == len(line):
        return
    view = memoryview(line)[written or 0 :]
    while view:
        written = handle.write(view)
        if not written:
            raise OSError(f"could not write the trace line ({len(view)} bytes left)")
        view = view[written:]


def append_event(path: Path, event_type: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """Append one event to a finished trace written by someone else (a server that has closed it, perhaps in another
    process), numbered after its last complete line. A cut-off last line is ended first, so the new event stays a
    line of its own and the reader reports the damage as before."""
    seq = 0
    ends_cleanly = True
    if path.exists():
        data = path.read_bytes()
        ends_cleanly = not data or data.endswith(b"\n")
        for line in reversed(data.splitlines()):
            try:
                last = json.loads(line)
            except ValueError:
                continue
            if isinstance(last, dict) and isinstance(last.get("seq"), int):
                seq = last["seq"] + 1
                break
    line = event_line(event_type, seq, utc_now(), fields)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        handle.write((b"" if ends_cleanly else b"\n") + line)
    result: dict[str, Any] = orjson.loads(line)
    return result

"""Append trace events to a JSONL file, one line per event written at once, so a killed server leaves a valid prefix.

A line is written the moment its event happens, on every call, so writing it must cost little next to the call
itself: the event is laid out in its model's field order straight from the fields given (`_Layout`), serialised by
orjson and written with one unbuffered `write`. Anything that path cannot vouch for (an unknown field, a value that
only pydantic knows how to turn into JSON, a text long enough to need cutting) goes through the event's pydantic
model as before, so the line is the same whichever way it was made (tests/trace/test_writer.py checks both ways).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import BaseModel

from mcp_hazard.json_parse import loads
from mcp_hazard.json_text import float_forms
from mcp_hazard.trace.events import ToolCalled
from mcp_hazard.trace.storage import StorageError, append_whole, storage_error
from mcp_hazard.trace.storage import write_whole as _write_all  # the name the benches switch off (bench/)

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
    (docs/architecture.md, "Determinism"). The date and time of day are formatted once per second; the microseconds
    are cut from the clock's decimal digits, which in place takes about half as long as dividing and formatting the
    number."""
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
    # A lone surrogate (from a peer's JSON or a file name) becomes its JSON escape: the line stays valid and the
    # reader puts U+FFFD in its place with a warning, where the episode's trace would have ended here.
    return dumped.encode("utf-8", "backslashreplace") + b"\n"


class TraceWriter:
    """Owns one episode's trace file. Thread-safe, since stdio and HTTP may write from different tasks.

    The file is created on the first event (an episode nobody connected to leaves no file) and stays open until
    `close()`. An event written after `close()` (a call refused after the episode ended) reopens the file in
    append mode for that one line, so nothing the agent does is lost.

    An existing trace is never appended to or overwritten: the file is created exclusively. The registry refuses a
    taken id before an episode exists; should another process create the same file in between, this episode writes
    to the first free `NAME-2.jsonl`, `NAME-3.jsonl`... instead (and `path` says where).

    A line that cannot be written (a full disk, a folder made read-only) is not written at all (storage.py), and
    the trace stops there: `failure` holds the `StorageError`, every later write raises it again without touching
    the file, and `on_failure` hears of it once. The file stays a valid prefix of the episode, never a trace with a
    hole in it; a file that got no line at all is removed.
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
        self.failure: StorageError | None = None
        self.on_failure: Callable[[StorageError], None] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def _line(self, line: bytes) -> None:
        if self._file is None:
            assert self.path is not None
            try:
                handle = self.path.open("ab", buffering=0) if self._created else self._claim(self.path)
            except OSError as exc:
                raise storage_error(self.path, exc) from None
            if self._closed:
                with handle:
                    _write_all(handle, line)
                return
            self._file = handle
        _write_all(self._file, line)

    def _failed(self, failure: StorageError) -> StorageError:
        """Stop the trace at its last whole line (see the class); the failure, to raise once `_announce`d."""
        self.failure = failure
        if self._file is not None:
            with contextlib.suppress(OSError):
                empty = self._seq == 0 and self.path is not None and self.path.stat().st_size == 0
                self._file.close()
                if empty and self.path is not None:
                    self.path.unlink()
            self._file = None
        return failure

    def _announce(self, failure: StorageError) -> StorageError:
        """Tell `on_failure` (outside the lock: it may log, or look at the episode); the failure, to raise."""
        callback, self.on_failure = self.on_failure, None
        if callback is not None:
            callback(failure)
        return failure

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
        """Write one event; a `StorageError` when it cannot be written (or an earlier line could not)."""
        failure: StorageError | None = None
        with self._lock:
            if self.failure is not None:
                raise self.failure.with_traceback(None)
            line = event_line(event_type, self._seq, utc_now(), fields)
            try:
                if self._file is not None:  # the episode's open file: every event after the first
                    _write_all(self._file, line)
                elif self.path is None:
                    self.events.append(orjson.loads(line))
                else:
                    self._line(line)
            except StorageError as exc:
                failure = self._failed(exc)
            else:
                self._seq += 1
        if failure is not None:
            raise self._announce(failure)

    def tool_called(
        self, tool: str, slot: int, arguments: Any, outcome: str, inner_arguments: Any, result: Any,
        text: str | None, error: str | None, hazards: list[int], duration_ms: float,
    ) -> None:  # fmt: skip
        """`tool_called`, the event of every call: laid out field by field in `ToolCalled`'s order (a test holds the
        two together), without the general layout's lookups. Whatever the direct path cannot vouch for, and any
        event of an episode whose file is not open yet, goes the general way."""
        failure: StorageError | None = None
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
                    try:
                        _write_all(handle, line)
                    except StorageError as exc:
                        failure = self._failed(exc)
                    else:
                        self._seq += 1
                        return
        if failure is not None:
            raise self._announce(failure)
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


def append_event(path: Path, event_type: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """Append one event to a finished trace written by someone else (a server that has closed it, perhaps in another
    process), numbered after its last complete line. A cut-off last line is ended first, so the new event stays a
    line of its own and the reader reports the damage as before. The line goes in whole or not at all (a
    `StorageError` when the disk refuses it)."""
    seq = 0
    ends_cleanly = True
    if path.exists():
        data = path.read_bytes()
        ends_cleanly = not data or data.endswith(b"\n")
        for line in reversed(data.splitlines()):
            try:
                last = loads(line)
            except ValueError:
                continue
            if isinstance(last, dict) and isinstance(last.get("seq"), int):
                seq = last["seq"] + 1
                break
    line = event_line(event_type, seq, utc_now(), fields)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(path.parent, exc) from None
    append_whole(path, (b"" if ends_cleanly else b"\n") + line)
    result: dict[str, Any] = orjson.loads(line)
    return result

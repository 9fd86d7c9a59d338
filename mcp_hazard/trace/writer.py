"""Append trace events to a JSONL file, one flushed line per event, so a killed server leaves a valid prefix."""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

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


def utc_now() -> str:
    """Timestamps are recorded, never used to decide anything (DESIGN.md section 4)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


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
        self._file: IO[str] | None = None
        self._closed = False
        self._seq = 0
        self._created = False
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed

    def _line(self, line: str) -> None:
        if self.path is None:
            return
        if self._file is None:
            handle = self.path.open("a", encoding="utf-8") if self._created else self._claim(self.path)
            if self._closed:
                with handle:
                    handle.write(line)
                return
            self._file = handle
        self._file.write(line)
        self._file.flush()

    def _claim(self, path: Path) -> IO[str]:
        """Create this episode's file, never opening one that exists (a trace from before a restart)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        for number in range(1, 10_000):
            candidate = path if number == 1 else path.with_name(f"{path.stem}-{number}{path.suffix}")
            try:
                handle = candidate.open("x", encoding="utf-8")
            except FileExistsError:
                continue
            self.path = candidate
            self._created = True
            return handle
        raise FileExistsError(f"{path} and 9,998 numbered alternatives already exist")

    def write(self, event_type: type[BaseModel], **fields: Any) -> dict[str, Any]:
        with self._lock:
            record = event_type(seq=self._seq, ts=utc_now(), **{k: _clip(v) for k, v in fields.items()})
            data = record.model_dump(mode="json")
            if self.path is None:
                self.events.append(data)
            else:
                self._line(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
            self._seq += 1
            return data

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._file is not None:
                self._file.close()
                self._file = None


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
    record = event_type(seq=seq, ts=utc_now(), **{k: _clip(v) for k, v in fields.items()})
    result = record.model_dump(mode="json")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        handle.write(("" if ends_cleanly else "\n") + text + "\n")
    return result

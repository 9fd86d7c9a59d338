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
    """Owns one episode's trace file. Thread-safe, since stdio and HTTP may write from different tasks."""

    def __init__(self, path: Path | None) -> None:
        """`path=None` keeps events in memory only (`events`), for in-process checks such as solvability."""
        self.path = path
        self.events: list[dict[str, Any]] = []
        self._file: IO[str] | None = None
        self._open = True
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")
        self._seq = 0
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return not self._open

    def write(self, event_type: type[BaseModel], **fields: Any) -> dict[str, Any]:
        with self._lock:
            record = event_type(seq=self._seq, ts=utc_now(), **{k: _clip(v) for k, v in fields.items()})
            data = record.model_dump(mode="json")
            if self._file is not None:
                self._file.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
                self._file.flush()
            elif self._open:
                self.events.append(data)
            self._seq += 1
            return data

    def close(self) -> None:
        with self._lock:
            self._open = False
            if self._file is not None:
                self._file.close()
                self._file = None

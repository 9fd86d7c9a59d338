"""Read trace files back, tolerating damage: a truncated last line or an unknown event is reported, not fatal."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_hazard.errors import UserError
from mcp_hazard.json_parse import decode, escapes_surrogate, problem, repair_surrogates
from mcp_hazard.regular_file import read_regular
from mcp_hazard.trace.events import EVENT_TYPES, SCHEMA_VERSION, comparable


@dataclass
class Trace:
    path: str
    events: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    @property
    def started(self) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("type") == "episode_started"), None)

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == event_type]


def read_trace(path: str | Path) -> Trace:
    """Parse a JSONL trace. Damaged lines become warnings naming file and line; a wrong schema version is an error."""
    file = str(path)
    try:
        text = read_regular(path)
    except OSError as exc:
        raise UserError(f"{file}: cannot read trace: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{file}: cannot read trace: not UTF-8 text (byte {exc.start})") from None
    return parse_trace(text, file)


def parse_trace(text: str, file: str) -> Trace:
    """`read_trace` of a file's text already read (`file` names it in warnings): the scorer reads each file once."""
    trace = Trace(path=file, events=[])
    lines = text.split("\n")
    suspect = escapes_surrogate(text)  # once per file; then only its lines with an escape are looked at
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = decode(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError (json_parse.py: the others)
            last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
            cut = last and isinstance(exc, json.JSONDecodeError)
            what = "truncated last line" if cut else f"invalid JSON ({problem(exc)})"
            trace.warnings.append(f"{file}:{number}: {what}; skipped")
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        if type(kind) is not str or kind not in EVENT_TYPES:  # a list or dict as `type` is no name either
            kind = kind if isinstance(event, dict) else type(event).__name__
            trace.warnings.append(f"{file}:{number}: unknown event type {kind!r}; skipped")
            continue
        if event["type"] == "episode_started":
            version = event.get("schema_version")
            if type(version) is not int:
                raise UserError(f"{file}:{number}: trace schema_version {version!r} is not a version number")
            if version > SCHEMA_VERSION:
                raise UserError(
                    f"{file}:{number}: trace schema_version {version!r} is newer than this mcp-hazard reads "
                    f"({SCHEMA_VERSION}); upgrade mcp-hazard"
                )
        if suspect and "\\u" in line:
            event, repaired = repair_surrogates(event)
            if repaired:
                trace.warnings.append(f"{file}:{number}: lone surrogate (\\ud800 to \\udfff) in {repaired} "
                                      "string(s), not Unicode text; replaced by U+FFFD")  # fmt: skip
        trace.events.append(event)
    return trace


def first_difference(left: Trace, right: Trace) -> str | None:
    """None when two traces match apart from volatile fields, else a one-line description of the first difference."""
    for index, (a, b) in enumerate(zip(left.events, right.events, strict=False)):
        ca, cb = comparable(a), comparable(b)
        if ca != cb:
            keys = sorted(k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k))
            return f"event {index} ({a.get('type')}): fields {keys} differ"
    if len(left.events) != len(right.events):
        return f"{len(left.events)} events vs {len(right.events)} events"
    return None

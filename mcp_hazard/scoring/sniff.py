"""Tell a trace from other JSONL by its first line, the `episode_started` event, before parsing the whole file;
with `sniff_text`, from the text already read, so that scoring reads each file once."""

from __future__ import annotations

import json
from typing import Any

from mcp_hazard.json_parse import loads
from mcp_hazard.regular_file import open_regular, read_regular


def _first_line(line: str, file: str, number: int) -> tuple[dict[str, Any] | None, str | None]:
    """What the first non-blank line says: a trace's start, other JSONL, or a line that is not JSON."""
    try:
        event = loads(line)
    except json.JSONDecodeError as exc:
        return None, f"{file}:{number}: first line is not JSON ({exc.msg}); file skipped"
    if isinstance(event, dict) and event.get("type") == "episode_started":
        return event, None
    return None, None


def sniff(file: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the episode_started event, None) for a trace; (None, None) for other JSONL; (None, warning) for a file
    whose first line cannot be read. Reads the first non-blank line only."""
    try:
        with open_regular(file) as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    return _first_line(line, file, number)
    except UnicodeDecodeError as exc:
        return None, f"{file}: not UTF-8 text (byte {exc.start}); file skipped"
    except OSError as exc:
        return None, f"{file}: cannot read: {exc.strerror or exc}; file skipped"
    return None, f"{file}: empty file; skipped"


def sniff_text(text: str, file: str) -> tuple[dict[str, Any] | None, str | None]:
    """`sniff` of a file's text already read: the scorer reads each file once."""
    start, number = 0, 1
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.strip():
            return _first_line(line, file, number)
        start, number = end + 1, number + 1
    return None, f"{file}: empty file; skipped"


def read_text(file: str) -> str | None:
    """The file's text, or None when it cannot be read as UTF-8 (`sniff` and `read_trace` then say why)."""
    try:
        return read_regular(file)
    except (OSError, UnicodeDecodeError):
        return None

"""The records of a JSONL log that mcp-hazard wrote beside its traces (the run log, the plan log) or of a trace read
only to look for an event: every line that holds a JSON object, in order.

Damage there must not cost a run or a score, so a file that cannot be read holds no records and a line that is not a
JSON object is passed over. (`read_trace`, in reader.py, is the reader that reports damage, with file and line.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_hazard.json_parse import loads
from mcp_hazard.regular_file import read_regular


def json_records(path: Path) -> list[dict[str, Any]]:
    """Each line of `path` that is a JSON object, parsed; none when the file cannot be read as UTF-8 text."""
    try:
        lines = read_regular(path).splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    records = []
    for line in lines:
        try:
            record = loads(line)
        except (ValueError, RecursionError):  # not JSON (json_parse.py says which kinds)
            continue
        if isinstance(record, dict):
            records.append(record)
    return records

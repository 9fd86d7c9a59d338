"""The per-episode table as CSV or JSON Lines (`score --per-episode FILE`), the rows of the report's `per_episode`.

JSON Lines keeps every value's type (lists stay lists, a missing duration is null); CSV is for spreadsheets, so lists
are joined with `;`, booleans are `true`/`false`, a missing value is empty and an answer that is not text is JSON.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from mcp_hazard.scoring.aggregate import EPISODE_COLUMNS

EPISODE_FORMATS = {".csv": "csv", ".jsonl": "jsonl"}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ";".join(str(item) for item in value)
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_episodes(rows: list[dict[str, Any]], fmt: str) -> str:
    """The rows in `fmt` (csv or jsonl), columns in EPISODE_COLUMNS order."""
    if fmt == "jsonl":
        return "".join(json.dumps({k: row.get(k) for k in EPISODE_COLUMNS}, ensure_ascii=False) + "\n" for row in rows)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(EPISODE_COLUMNS)
        for row in rows:
            answer = row.get("answer")
            cells = {**row, "answer": answer if isinstance(answer, str) else _cell(answer)}
            writer.writerow([_cell(cells.get(k)) for k in EPISODE_COLUMNS])
        return buffer.getvalue()
    raise ValueError(f"unknown per-episode format {fmt!r}")

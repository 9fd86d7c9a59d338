"""The episodes embedded in the HTML report for its drill-down: the per-episode rows with their timelines, as JSON,
gzip-compressed (mtime 0, so the same report gives the same bytes) and base64-encoded.

Compressed, 10,000 episodes with their timelines take a few megabytes instead of tens (docs/performance.md); the
page's script unpacks them with the browser's own DecompressionStream the first time a list is asked for.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

from mcp_hazard.scoring.timeline import whole


def episode_rows(report: dict[str, Any], timelines: dict[str, list[Any]] | None) -> list[dict[str, Any]]:
    """The per-episode rows as the page's script reads them: an answer that is not text as JSON, a very long one cut
    at FULL_CHARS with how many characters more (as timeline values are), and the episode's timeline."""
    rows = []
    for index, row in enumerate(r for r in report.get("per_episode") or [] if isinstance(r, dict)):
        answer = row.get("answer")
        shown = {**row, "index": index, "answer": None if answer is None else whole(answer), "seed": row.get("seed"),
                 "timeline": (timelines or {}).get(str(row.get("trace")))}  # fmt: skip
        for key in ("hazards", "premature_reasons", "hazard_kinds", "hazards_fired", "call_failures"):
            shown.setdefault(key, [])
        rows.append(shown)
    return rows


def episode_data(report: dict[str, Any], timelines: dict[str, list[Any]] | None) -> str:
    text = json.dumps(episode_rows(report, timelines), ensure_ascii=False, separators=(",", ":"))
    data = text.encode("utf-8", "backslashreplace")  # a file name not in UTF-8 holds surrogates: `\udcff` in JSON
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")

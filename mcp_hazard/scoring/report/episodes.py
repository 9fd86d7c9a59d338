"""The per-episode table as CSV or JSON Lines (`score --per-episode FILE`), the rows of the report's `per_episode`,
and as the Markdown report's "Episodes" section.

JSON Lines keeps every value's type (lists stay lists, a missing duration is null); CSV is for spreadsheets, so lists
are joined with `;`, the agent's notes one per line in their cell, booleans are `true`/`false`, a missing value is
empty and an answer that is not text is JSON. A text cell a spreadsheet would run as a formula is written with a
leading `'` (`_inert`); JSON Lines keeps every value as it is.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from mcp_hazard.scoring.episode_rows import EPISODE_COLUMNS
from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report.section import Section

EPISODE_FORMATS = {".csv": "csv", ".jsonl": "jsonl"}
MD_CHARS = 120  # of an answer or expected answer in the Markdown table


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
            answer, notes = row.get("answer"), row.get("notes")
            cells = {**row, "answer": answer if isinstance(answer, str) else _cell(answer),
                     "notes": "\n".join(str(n) for n in notes) if isinstance(notes, list) else None}  # fmt: skip
            writer.writerow([_inert(_cell(cells.get(k))) for k in EPISODE_COLUMNS])
        return buffer.getvalue()
    raise ValueError(f"unknown per-episode format {fmt!r}")


def _inert(text: str) -> str:
    """`text` as a spreadsheet shows it, never runs it: a cell starting `=`, `+`, `-`, `@`, a tab or a carriage
    return is a formula to Excel and its kin (`=HYPERLINK(...)` sends a click's data away), and an agent's answer
    is whatever the agent, or a prompt injection, made it. Such a cell gets a leading `'`, unless it is a number."""
    if not text or text[0] not in "=+-@\t\r":
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


def _short(value: Any, limit: int = MD_CHARS) -> str:
    """One line of at most about `limit` characters, saying how many more there were."""
    text = " ".join((value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).split())
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def episode_section(report: dict[str, Any]) -> Section:
    """Every episode as one table row (the Markdown report: the HTML report has its own drill-down): what was run,
    the verdict, the answer beside the expected answer and the rules, and the hazards."""
    entries = [row for row in report.get("per_episode") or [] if isinstance(row, dict)]
    rows = []
    for r in entries:
        fired, recovered = r.get("hazards_fired") or [], r.get("hazards_recovered") or []
        rows.append([
            f.text(r.get("agent")), f"{f.text(r.get('scenario'))}/{f.text(r.get('task'))}", f.text(r.get("condition")),
            f.text(r.get("interventions")), f.text(r.get("profile")), f.count(r.get("seed")),
            "✓ solved" if r.get("correct") else f"✗ {f.text(r.get('class') or r.get('episode_failure'))}",
            _short(r.get("answer")) if r.get("answered") else "(none)",
            _short(r.get("expected")) if r.get("match") else "(none)", f.text(r.get("match") or None),
            f.text(r.get("answer_rule")), "yes" if r.get("premature_reasons") else "no",
            f"{len(recovered)}/{len(fired)}" if fired else f.MISSING, f.count(r.get("calls")),
        ])  # fmt: skip
    return Section(
        "episodes", "Episodes",
        "Every scored episode: the answer beside the task's expected answer, the task's matching rule and the rule "
        "that decided; hazards = firings recovered/fired. Long answers are cut (the trace, the JSON report and "
        "score --per-episode have them whole).",
        ["agent", "task", "condition", "interventions", "profile", "seed", "verdict", "answer", "expected",
         "matching rule", "decided by", "premature", "hazards", "calls"], rows, "No episodes.",
        numeric={5, 13}, fold=20,
    )  # fmt: skip

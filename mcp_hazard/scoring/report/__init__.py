"""Render an aggregated report (the dict from `scoring.aggregate.aggregate`) as table, JSON, Markdown or HTML.

Every format but JSON is laid out from the same sections (`sections.build`), so they show the same numbers.
"""

from __future__ import annotations

import json
from typing import Any

FORMATS = ("table", "json", "markdown", "html")


def render(
    report: dict[str, Any], fmt: str, *, verbose: bool = True, timelines: dict[str, list[Any]] | None = None
) -> str:
    """`report` in `fmt`. `verbose=False` makes the table the short scorecard; `timelines` (by trace path, from
    `score_traces(..., timelines=True)`) give the HTML drill-down each episode's timeline."""
    if fmt == "json":
        return json.dumps(report, indent=2, ensure_ascii=False)
    if fmt == "table":
        from mcp_hazard.scoring.report.table import render_table

        return render_table(report, verbose=verbose)
    if fmt == "markdown":
        from mcp_hazard.scoring.report.markdown import render_markdown

        return render_markdown(report)
    if fmt == "html":
        from mcp_hazard.scoring.report.html import render_html

        return render_html(report, timelines)
    raise ValueError(f"unknown report format {fmt!r}")


__all__ = ["FORMATS", "render"]

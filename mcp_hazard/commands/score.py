"""`score`: score traces and write the report (table, JSON, Markdown or HTML)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcp_hazard.commands import EXIT_INVALID
from mcp_hazard.errors import UserError

SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".html": "html", ".htm": "html", ".txt": "table"}


def score(args: argparse.Namespace) -> int:
    from mcp_hazard.scoring.aggregate import aggregate
    from mcp_hazard.scoring.collect import score_traces
    from mcp_hazard.scoring.report import render

    scored = score_traces(args.paths, scenarios=args.scenarios, allow_python=args.allow_python)
    report = aggregate(scored.scores, scored.warnings)
    fmt = args.format
    if args.out and fmt == "table":
        fmt = SUFFIX_FORMATS.get(Path(args.out).suffix.lower(), "table")
    text = render(report, fmt)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"{args.out}: cannot write report: {exc.strerror or exc}") from None
        print(f"mcp-hazard: wrote {fmt} report of {report['episodes']} episodes to {args.out}", file=sys.stderr)
    else:
        print(text)
    for warning in scored.warnings:
        print(f"mcp-hazard: warning: {warning}", file=sys.stderr)
    return 0 if scored.scores else EXIT_INVALID

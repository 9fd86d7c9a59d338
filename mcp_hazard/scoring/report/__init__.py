"""Render an aggregated report (the dict from `scoring.aggregate.aggregate`) as table, JSON, Markdown or HTML."""

from __future__ import annotations

import json
from typing import Any


def render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2, ensure_ascii=False)
    raise ValueError(f"unknown report format {fmt!r}")

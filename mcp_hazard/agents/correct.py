"""A failed call corrected from what its error (and any hint) says: a renamed argument moved, a constant passed, a
date put in the format asked for, a number sent as text. The recovering agent tries these before giving up."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from mcp_hazard.agents.argument_fit import fit_value, reformat_date
from mcp_hazard.agents.paths import get_path, has_path, moved, with_path

DATE_FORMATS = ("%d/%m/%Y", "%m/%d/%Y", "%Y%m%d", "%d.%m.%Y", "%Y/%m/%d")


def _iso(value: Any) -> str | None:
    for fmt in DATE_FORMATS:
        try:
            return dt.datetime.strptime(str(value), fmt).date().isoformat()
        except ValueError:
            continue
    return None


def corrected_call(args: dict[str, Any], text: str, hints: list[str], tried: int) -> tuple[dict[str, Any], int] | None:
    """A corrected call from what the error (and any hint) says; None when it says nothing fixable."""
    said = " ".join([text, *hints])
    fixed = dict(args)
    renamed = re.search(r"'([^']+)' is now called '([^']+)'", said) or re.search(
        r"unexpected argument '([^']+)'; missing required argument '([^']+)'", said
    )
    if renamed and has_path(fixed, renamed.group(1)):
        return moved(fixed, renamed.group(1), renamed.group(2)), tried
    passed = re.search(r'Pass ([\w.]+)="([^"]*)"', said)
    if passed:
        return with_path(fixed, passed.group(1), passed.group(2)), tried
    field = re.search(r"Invalid argument '([^']+)'", text)
    if field and has_path(fixed, field.group(1)):
        name = field.group(1)
        if "date format" in said and tried < len(DATE_FORMATS):
            current = get_path(fixed, name)
            iso = _iso(current) or str(current)
            guided = re.search(r"as (DD/MM/YYYY|MM/DD/YYYY)", said)
            fmt = (
                {"DD/MM/YYYY": "%d/%m/%Y", "MM/DD/YYYY": "%m/%d/%Y"}[guided.group(1)] if guided else DATE_FORMATS[tried]
            )
            new = reformat_date(iso, fmt)
            if new is not None and new != current:
                return with_path(fixed, name, new), tried + 1
        if "wrong type" in said or "as text" in said:
            value = get_path(fixed, name)
            new = str(value) if not isinstance(value, str) else fit_value({"type": "number"}, value)
            if new != value:
                return with_path(fixed, name, new), tried
    return None

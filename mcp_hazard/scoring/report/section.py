"""The Section model every report format lays out (title, one-sentence meaning, columns, formatted rows), and the
tolerant readers of the aggregate dict the section builders share.

It sits below the modules that build sections (sections.py, matrices.py, research.py) and the renderers (table,
Markdown, HTML), so none of them imports another to reach it. Every cell is already formatted text (see `_format`);
escaping for the target format is the renderer's job.

A section may also say which episodes are behind each row or cell (`links`, `cell_links`: filters on the per-episode
rows, which the HTML report turns into drill-down links), colour its cells (`heat`: a heatmap in HTML), and whether it
belongs to the terminal's short scorecard. A section with no rows is one line saying why, at the end of every format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

SectionKind = Literal["table", "facts", "list"]
Filter = dict[str, str]  # per-episode field -> value: the episodes behind a row or a cell (list fields: contains)
GREY = "off"  # a heat value: a cell that has no value to colour ("did not fire", nothing paired)
Heat = float | str | None  # 0..1 coloured on the rate scale, GREY, or None (no colour: labels, counts)


@dataclass
class Section:
    key: str  # stable anchor: html ids, tests
    title: str
    blurb: str  # what the numbers mean, one or two sentences
    columns: list[str]
    rows: list[list[str]]
    empty: str  # said instead of a table when there are no rows: why, and how to get it
    kind: SectionKind = "table"
    numeric: set[int] = field(default_factory=set)  # right-aligned column indices
    detail: bool = False  # a secondary breakdown: folded away in HTML, only with --verbose in the terminal
    fold: int | None = None  # fold the table (HTML, Markdown) above this many rows
    scorecard: bool = False  # in the terminal's short scorecard (`run`, `score` without --verbose)
    brief: list[int] | None = None  # the columns the scorecard shows (default: all)
    links: Sequence[Filter | None] | None = None  # per row: its episodes (linked from column `link_column`)
    link_column: int = 0
    cell_links: Sequence[Sequence[Filter | None]] | None = None  # per cell: its episodes (matrices)
    heat: Sequence[Sequence[Heat]] | None = None  # per cell: its colour value (heatmaps)
    tips: Sequence[Sequence[str]] | None = None  # per cell: more detail on hover (HTML), e.g. counts and intervals


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a mapping, else empty: a report read back from JSON may miss or damage any part."""
    return value if isinstance(value, dict) else {}


def dict_rows(value: Any) -> list[dict[str, Any]]:
    """The mapping rows of a list (anything else is dropped), for the same reason."""
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []

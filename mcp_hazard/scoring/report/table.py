"""The report as plain text tables for a terminal (rich, exported as text so it works without a TTY)."""

from __future__ import annotations

import io
from typing import Any

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from mcp_hazard.scoring.report.sections import Section, build

WIDTH = 120
MAX_WARNINGS = 20


def _table(section: Section) -> Table:
    facts = section.kind == "facts"
    table = Table(box=box.SIMPLE_HEAD, show_header=not facts, show_edge=False, pad_edge=False, expand=False)
    for index, column in enumerate(section.columns):
        justify: JustifyMethod = "right" if index in section.numeric else "left"
        table.add_column(Text(column), justify=justify, style="bold" if facts and index == 0 else None,
                         overflow="fold")  # fmt: skip
    for row in section.rows:
        table.add_row(*(Text(cell) for cell in row))  # Text: data never parsed as rich markup
    return table


def _print(console: Console, section: Section) -> None:
    console.rule(Text(section.title), align="left")
    console.print(Text(section.blurb, style="dim"))
    if not section.rows:
        console.print(Text(section.empty, style="italic"))
    elif section.kind == "list":
        for (line,) in section.rows[:MAX_WARNINGS]:
            console.print(Text(f"- {line}"), soft_wrap=True)  # whole, so a path can be copied or grepped
        hidden = len(section.rows) - MAX_WARNINGS
        if hidden > 0:
            console.print(Text(f"... and {hidden} more (all of them in --format json, markdown or html)"))
    else:
        console.print(_table(section))
    console.print()


def render_table(report: dict[str, Any], width: int = WIDTH) -> str:
    console = Console(file=io.StringIO(), record=True, width=width, color_system=None, force_terminal=False,
                      highlight=False, soft_wrap=False)  # fmt: skip
    title = (
        f"mcp-hazard report ({report.get('generated_by', 'mcp-hazard')}, schema {report.get('report_schema_version')})"
    )
    console.print(Text(title, style="bold"))
    console.print()
    for section in build(report):
        if not section.detail:
            _print(console, section)
    lines = console.export_text(styles=False).splitlines()
    return "\n".join(line.rstrip() for line in lines).rstrip() + "\n"

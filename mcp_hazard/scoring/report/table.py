"""The report as plain text tables for a terminal (rich, exported as text so it works without a TTY).

Two lengths: the scorecard (the sections marked `scorecard`, without their explanations: one screen, about 40
lines, for the end of `mcp-hazard run`) and the full report (`verbose`: every section with its meaning, as in the
Markdown and HTML reports). Sections with nothing to show are one line each at the end.
"""

from __future__ import annotations

import io
from typing import Any

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from mcp_hazard.scenario.suite_id import describe as describe_suite
from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report.section import Section
from mcp_hazard.scoring.report.sections import build
from mcp_hazard.terminal_text import visible

WIDTH = 120
MAX_WARNINGS = 20
NOTHING = "Nothing to show"


def _table(section: Section, columns: list[int]) -> Table:
    facts = section.kind == "facts"
    table = Table(box=box.SIMPLE_HEAD, show_header=not facts, show_edge=False, pad_edge=False, expand=False)
    for index in columns:
        justify: JustifyMethod = "right" if index in section.numeric else "left"
        table.add_column(Text(section.columns[index]), justify=justify, overflow="fold",
                         style="bold" if facts and index == 0 else None)  # fmt: skip
    for row in section.rows:
        table.add_row(*(Text(visible(row[i])) for i in columns))  # Text: data never parsed as rich markup
    return table


def _print(console: Console, section: Section, *, brief: bool) -> None:
    console.rule(Text(section.title), align="left")
    if not brief:
        console.print(Text(section.blurb, style="dim"))
    if section.kind == "list":
        for line, *_ in section.rows[:MAX_WARNINGS]:
            shown = Text(f"- {visible(line, one_line=True)}")
            console.print(shown, soft_wrap=True)  # whole, so a path can be copied or grepped
        hidden = len(section.rows) - MAX_WARNINGS
        if hidden > 0:
            console.print(Text(f"... and {hidden} more (all of them in --format json, markdown or html)"))
    else:
        columns = section.brief if brief and section.brief is not None else list(range(len(section.columns)))
        console.print(_table(section, columns))
    if not brief:
        console.print()


def _summary(report: dict[str, Any]) -> str:
    """Episodes and agents, with no rate: one pooled over agents describes none of them (the Agents table follows);
    and the episodes no rate counts, if any (the same words as the headline's)."""
    agents = report.get("agent_outcomes") or report.get("agents")
    count = len(agents) if isinstance(agents, dict) else 0
    episodes = f.count(report.get("episodes"))
    line = (f"mcp-hazard scorecard: {episodes} episode{'' if episodes == '1' else 's'}, {count} agent"
            f"{'' if count == 1 else 's'}; each agent's success, recovery and premature answers below")  # fmt: skip
    suite = report.get("suite")
    if isinstance(suite, dict) and suite:
        line += f"\nSuite: {describe_suite(suite)}."
    apart = f.without_verdict(report)
    return f"{line}\nIn no success rate: {apart}." if apart else line


def render_table(report: dict[str, Any], width: int = WIDTH, *, verbose: bool = True) -> str:
    console = Console(file=io.StringIO(), record=True, width=width, color_system=None, force_terminal=False,
                      highlight=False, soft_wrap=False)  # fmt: skip
    sections = build(report)
    if verbose:
        title = f"mcp-hazard report ({report.get('generated_by', 'mcp-hazard')}, schema " \
                f"{report.get('report_schema_version')})"  # fmt: skip
        console.print(Text(title, style="bold"))
        console.print()
    else:
        console.print(Text(_summary(report), style="bold"))
        sections = [s for s in sections if s.scorecard]
    empty = [s for s in sections if not s.rows]
    for section in sections:
        if section.rows:
            _print(console, section, brief=not verbose)
    if empty:
        console.rule(Text(NOTHING), align="left")
        for section in empty:
            console.print(Text(f"- {section.title}: {section.empty}"))
    lines = console.export_text(styles=False).splitlines()
    # rich drops some control characters and keeps others: each cell is made visible before it is laid out
    return visible("\n".join(line.rstrip() for line in lines).rstrip() + "\n")

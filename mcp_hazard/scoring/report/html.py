"""The report as one self-contained HTML file: inline CSS, inline SVG plots, one inline script, nothing fetched.

Works offline and can be attached to a CI run as is. Sections become tables; a section's `heat` colours its cells
(a heatmap, "did not fire" greyed), and its `links`/`cell_links` become links to the episodes behind a row or a
cell. The first screen has a card per agent, never a rate pooled over agents. The episodes themselves (one row each,
with the verdict, the answer beside the expected answer, the agent's notes, the hazards that fired and a timeline of
the trace) are embedded compressed and drawn only when asked for, so a report of 10,000 episodes opens quickly
(docs/performance.md). Every string from the data is escaped (`html.escape`) here and set as text by the script:
scenario, task and agent names come from user files.
"""

from __future__ import annotations

import html
from itertools import pairwise
from typing import Any
from urllib.parse import urlencode

from mcp_hazard.scenario.suite_id import describe as describe_suite
from mcp_hazard.scoring.report.html_assets import CSS, SCRIPT
from mcp_hazard.scoring.report.html_data import episode_data
from mcp_hazard.scoring.report.plots import all_plots
from mcp_hazard.scoring.report.section import GREY, Filter, Heat, Section, as_dict
from mcp_hazard.scoring.report.sections import build

MAX_OPEN_WARNINGS = 20
MAX_CARDS = 8  # agents with a card of their own; the rest are in the Agents table
NOTHING = "Nothing to show"
# The heat scale (ColorBrewer RdBu, safe for the common colour blindnesses): 0 red, 0.5 light, 1 blue.
STOPS = ((0.0, (178, 24, 43)), (0.25, (239, 138, 98)), (0.5, (247, 247, 247)), (0.75, (103, 169, 207)),
         (1.0, (33, 102, 172)))  # fmt: skip
EPISODE_COLUMNS = ("agent · task", "condition", "interventions", "profile", "seed", "verdict", "hazards", "calls")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def colour(value: float) -> tuple[str, str]:
    """(background, text colour) of a heat value in [0, 1]."""
    value = max(0.0, min(1.0, value))
    for (low, a), (high, b) in pairwise(STOPS):
        if value <= high:
            t = (value - low) / (high - low)
            rgb = tuple(round(x + (y - x) * t) for x, y in zip(a, b, strict=True))
            break
    light = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 150
    return "#" + "".join(f"{channel:02x}" for channel in rgb), "#1d1f23" if light else "#ffffff"


def _href(link: Filter) -> str:
    return "#episodes?" + urlencode(link) if link else "#episodes"


def _cell(section: Section, r: int, i: int, text: str) -> str:
    """One <td>: numeric alignment, heat colour or grey, a tooltip, and a link to its episodes."""
    classes = ["num"] if i in section.numeric else []
    style = ""
    heat: Heat = section.heat[r][i] if section.heat and i < len(section.heat[r]) else None
    if heat == GREY:
        classes.append("off")
    elif isinstance(heat, int | float) and not isinstance(heat, bool):
        background, ink = colour(float(heat))
        classes.append("heat-cell")
        style = f' style="--heat:{background};--ink:{ink}"'
    if section.heat is not None and i > 0 and heat is not None:
        classes.append("cell")
    tip = section.tips[r][i] if section.tips and i < len(section.tips[r]) and section.tips[r][i] else ""
    link: Filter | None = None
    if section.cell_links is not None and i < len(section.cell_links[r]):
        link = section.cell_links[r][i]
    if link is None and i == section.link_column and section.links is not None:
        link = section.links[r]
    body = _e(text) if link is None else f'<a href="{_e(_href(link))}">{_e(text)}</a>'
    attributes = (f' class="{" ".join(classes)}"' if classes else "") + style + (f' title="{_e(tip)}"' if tip else "")
    return f"<td{attributes}>{body}</td>"


def _table(section: Section) -> str:
    facts = section.kind == "facts"
    kind = "facts" if facts else "data heat" if section.heat is not None else "data"
    out = [f'<table class="{kind}">']
    if not facts:
        cells = "".join(
            f'<th scope="col"{" class=num" if i in section.numeric else ""}>{_e(c)}</th>'
            for i, c in enumerate(section.columns)
        )
        out.append(f"<thead><tr>{cells}</tr></thead>")
    out.append("<tbody>")
    for r, row in enumerate(section.rows):
        if facts:
            out.append(
                f'<tr><th scope="row">{_e(row[0])}</th>' + "".join(f"<td>{_e(c)}</td>" for c in row[1:]) + "</tr>"
            )
            continue
        out.append("<tr>" + "".join(_cell(section, r, i, c) for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _legend(section: Section) -> str:
    greys = section.heat is not None and any(value == GREY for row in section.heat for value in row)
    grey = '<span class="off">grey: no rate (did not fire, nothing paired)</span>' if greys else ""
    low, high = ("0.00", "1.00 (no loss)") if "IRS" in section.title else ("0%", "100%")
    return f'<div class="legend"><span>{low}</span><span class="ramp"></span><span>{high}</span>{grey}</div>'


def _warnings(section: Section) -> str:
    items = "\n".join(f"<li>{_e(line)}</li>" for (line, *_) in section.rows)
    listing = f'<ul class="warnings">\n{items}\n</ul>'
    if len(section.rows) <= MAX_OPEN_WARNINGS:
        return listing
    return f"<details><summary>Show all {len(section.rows)} warnings</summary>\n{listing}\n</details>"


def _section(section: Section, plot: str | None) -> str:
    out = [
        f'<section id="{_e(section.key)}">',
        f"<h2>{_e(section.title)}</h2>",
        f'<p class="blurb">{_e(section.blurb)}</p>',
    ]
    if plot is not None:
        out.append(f"<figure>\n{plot}\n</figure>")
    if section.heat is not None and section.rows:
        out.append(_legend(section))
    if section.kind == "list":
        out.append(_warnings(section))
    elif section.fold is not None and len(section.rows) > section.fold:
        out.append(f"<details><summary>Show all {len(section.rows)} rows</summary>\n{_table(section)}\n</details>")
    else:
        out.append(_table(section))
    out.append("</section>")
    return "\n".join(out)


Card = tuple[str, str, list[str], str | None, bool]  # label, value, lines below it, link, whether an agent's


def _agent_card(report: dict[str, Any], agent: str, entry: dict[str, Any]) -> Card:
    from mcp_hazard.scoring.report import _format as f

    overall = as_dict(as_dict(as_dict(report.get("groups")).get("agent")).get(agent))
    premature, recovery = as_dict(entry.get("premature")), as_dict(entry.get("recovery"))
    lines = [f"success, 95% CI {f.ci(overall.get('ci95'))} ({f.count(overall.get('successes'))}/"
             f"{f.count(overall.get('n'))} episodes)"]  # fmt: skip
    if premature:
        lines.append(f"premature answers {f.pct(premature.get('rate'))} ({f.count(premature.get('successes'))}/"
                     f"{f.count(premature.get('n'))} episodes)")  # fmt: skip
    lines.append(f"hazards recovered {f.pct(recovery.get('rate'))} ({f.count(recovery.get('successes'))}/"
                 f"{f.count(recovery.get('n'))} firings)" if recovery else "no hazard firings")  # fmt: skip
    return agent, f.pct(overall.get("rate")), lines, "#episodes?" + urlencode({"agent": agent}), True


def _cards(report: dict[str, Any]) -> str:
    """The first screen: what was run, then one card per agent (its success rate, and its premature answers and
    recoveries with what each is of). Never a rate pooled over agents: a 0% and a 100% agent would read 50%."""
    from mcp_hazard.scoring.report import _format as f

    warned = len(report.get("warnings") or [])
    agents = as_dict(report.get("agents"))
    counts = [f"{len(agents)} agent{'' if len(agents) == 1 else 's'}", f"{warned} warning{'' if warned == 1 else 's'}"]
    cards: list[Card] = [("episodes", f.count(report.get("episodes")), counts, None, False)]
    cards += [_agent_card(report, agent, as_dict(entry)) for agent, entry in sorted(agents.items())[:MAX_CARDS]]
    if len(agents) > MAX_CARDS:
        cards.append(("more agents", str(len(agents) - MAX_CARDS), ["in the Agents table below"], "#agents", False))
    items = "".join(
        f'<div class="card"><div class="label{" agent" if mine else ""}">{_e(label)}</div><div class="value">'
        + (f'<a href="{_e(link)}">{_e(value)}</a>' if link else _e(value))
        + "</div>"
        + "".join(f'<div class="sub">{_e(line)}</div>' for line in sub)
        + "</div>"
        for label, value, sub, link, mine in cards
    )
    return f'<div class="cards">{items}</div>'


def _episodes(report: dict[str, Any], timelines: dict[str, list[Any]] | None) -> str:
    head = "".join(f'<th scope="col"{" class=num" if c in ("seed", "calls") else ""}>{_e(c)}</th>'
                   for c in EPISODE_COLUMNS)  # fmt: skip
    return "\n".join([
        '<section id="episodes">', "<h2>Episodes</h2>",
        '<p class="blurb">Every scored episode. A heatmap cell or a table row above lists the episodes behind it '
        "here; an episode opens its verdict, its answer beside the expected answer with the task's matching rule and "
        "the rule that decided, the agent's notes, the hazards that fired and whether each was recovered, and a "
        "timeline of its trace with injected faults marked (a value cut to one line opens whole on a click).</p>",
        '<noscript><p class="empty">The episode list needs JavaScript; every number above is there without it.</p>'
        "</noscript>",
        '<div id="episode-filter"><a href="#episodes">Show all episodes</a></div>',
        f'<table class="data" id="episode-list"><thead><tr>{head}</tr></thead><tbody></tbody></table>',
        '<div id="episode-pager"></div>', "</section>", '<section id="episode" hidden></section>',
        '<script type="application/octet-stream" id="episode-data" data-encoding="gzip+base64">'
        f"{episode_data(report, timelines)}</script>",
    ])  # fmt: skip


def render_html(report: dict[str, Any], timelines: dict[str, list[Any]] | None = None) -> str:
    sections = build(report)
    plots = all_plots(report)
    generated = _e(report.get("generated_by", "mcp-hazard"))
    version = _e(report.get("report_schema_version"))
    suite = _e(describe_suite(report.get("suite") if isinstance(report.get("suite"), dict) else None))
    shown = [s for s in sections if s.rows]
    main = [s for s in shown if not s.detail and s.kind != "list"]
    detail = [s for s in shown if s.detail]
    lists = [s for s in shown if s.kind == "list"]
    empty = [s for s in sections if not s.rows]
    nav = " ".join(f'<a href="#{_e(s.key)}">{_e(s.title)}</a>' for s in main)
    nav += ' <a href="#episodes">Episodes</a>' + "".join(f' <a href="#{_e(s.key)}">{_e(s.title)}</a>' for s in lists)
    body = [_section(s, plots.get(s.key)) for s in main]
    if detail:
        inner = "\n".join(_section(s, None) for s in detail)
        titles = ", ".join(s.title for s in detail)
        body.append(f'<details class="detail"><summary>More breakdowns: {_e(titles)}</summary>\n{inner}\n</details>')
    body.append(_episodes(report, timelines))
    body += [_section(s, None) for s in lists]
    if empty:
        items = "".join(f"<li><strong>{_e(s.title)}</strong>: {_e(s.empty)}</li>" for s in empty)
        body.append(f'<section id="nothing"><h2>{NOTHING}</h2><ul class="nothing">{items}</ul></section>')
    episodes = _e(report.get("episodes", 0))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="{generated}">',
        f"<title>mcp-hazard report ({episodes} episodes)</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<header>",
        "<h1>mcp-hazard report</h1>",
        f'<p class="meta">{episodes} episodes · suite {suite} · generated by {generated} · report schema version '
        f"{version}</p>",
        f"<nav>{nav}</nav>",
        "</header>",
        _cards(report),
        *body,
        f"<footer>Generated by {generated}, report schema version {version}. Every number is defined in "
        "docs/scoring.md of mcp-hazard; intervals are 95% Wilson score intervals.</footer>",
        "</main>",
        f"<script>{SCRIPT}</script>",
        "</body>",
        "</html>",
        "",
    ])  # fmt: skip

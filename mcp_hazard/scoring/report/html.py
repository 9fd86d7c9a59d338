"""The report as one self-contained HTML file: inline CSS, inline SVG plots, no scripts, fonts or URLs.

Works offline and can be attached to a CI run as is. Every string from the data is escaped (`html.escape`):
scenario, task and agent names come from user files.
"""

from __future__ import annotations

import html
from typing import Any

from mcp_hazard.scoring.report.plots import all_plots
from mcp_hazard.scoring.report.sections import Section, build, per_episode

MAX_OPEN_WARNINGS = 20

CSS = """
:root { --fg: #1d1f23; --muted: #5c6370; --line: #d9dce1; --stripe: #f6f7f9; --accent: #0072B2; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 4px; padding-top: 8px; border-top: 1px solid var(--line); }
.meta, .blurb, .empty, footer { color: var(--muted); }
.blurb { margin: 0 0 10px; max-width: 980px; }
.empty { font-style: italic; }
nav { margin: 14px 0 4px; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 13px; }
nav a { color: var(--accent); text-decoration: none; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 18px 0 6px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px; min-width: 200px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 22px; font-weight: 600; }
.card .sub { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 4px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 12px 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; background: var(--stripe); white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fbfbfc; }
td.num, th.num { text-align: right; white-space: nowrap; }
td { overflow-wrap: anywhere; }
table.facts th { background: none; font-weight: 600; }
figure { margin: 10px 0 14px; }
svg.plot { max-width: 100%; height: auto; font-family: inherit; }
svg .plot-title { font-size: 14px; font-weight: 600; fill: var(--fg); }
svg .label, svg .legend { font-size: 12px; fill: var(--fg); }
svg .tick, svg .value { font-size: 11px; fill: var(--muted); }
svg .grid { stroke: #eceef1; }
svg .axis { stroke: #8a9099; fill: none; }
svg .whisker { stroke: var(--fg); stroke-width: 1.5; fill: none; }
svg .reference { stroke: #D55E00; stroke-width: 1.5; stroke-dasharray: 5 4; }
svg .line { fill: none; stroke-width: 2.5; }
svg .frame { fill: #fafafa; stroke: var(--line); }
svg .empty { font-size: 13px; fill: var(--muted); font-style: italic; }
ul.warnings { padding-left: 20px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12px; }
details > summary { cursor: pointer; color: var(--accent); margin: 8px 0; }
footer { margin-top: 36px; font-size: 12px; }
@media print { h2 { break-after: avoid; } figure, tr { break-inside: avoid; } }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(section: Section) -> str:
    facts = section.kind == "facts"
    out = [f'<table class="{"facts" if facts else "data"}">']
    if not facts:
        cells = "".join(
            f'<th scope="col"{" class=num" if i in section.numeric else ""}>{_e(c)}</th>'
            for i, c in enumerate(section.columns)
        )
        out.append(f"<thead><tr>{cells}</tr></thead>")
    out.append("<tbody>")
    for row in section.rows:
        if facts:
            out.append(
                f'<tr><th scope="row">{_e(row[0])}</th>' + "".join(f"<td>{_e(c)}</td>" for c in row[1:]) + "</tr>"
            )
            continue
        cells = "".join(f"<td{' class=num' if i in section.numeric else ''}>{_e(c)}</td>" for i, c in enumerate(row))
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _warnings(section: Section) -> str:
    items = "\n".join(f"<li>{_e(line)}</li>" for (line,) in section.rows)
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
    if not section.rows:
        out.append(f'<p class="empty">{_e(section.empty)}</p>')
    elif section.kind == "list":
        out.append(_warnings(section))
    elif section.fold is not None and len(section.rows) > section.fold:
        out.append(f"<details><summary>Show all {len(section.rows)} rows</summary>\n{_table(section)}\n</details>")
    else:
        out.append(_table(section))
    out.append("</section>")
    return "\n".join(out)


def _cards(report: dict[str, Any]) -> str:
    from mcp_hazard.scoring.report import _format as f

    overall, premature = report.get("overall") or {}, report.get("premature") or {}
    recovery = report.get("recovery") or {}
    fired = sum(int(v.get("n") or 0) for v in recovery.values() if isinstance(v, dict))
    recovered = sum(int(v.get("successes") or 0) for v in recovery.values() if isinstance(v, dict))
    warned = len(report.get("warnings") or [])
    cards = [
        ("episodes", f.count(report.get("episodes")), f"{warned} warning{'' if warned == 1 else 's'}"),
        ("success rate", f.pct(overall.get("rate")), f"95% CI {f.ci(overall.get('ci95'))}"),
        ("premature answers", f.pct(premature.get("rate")), f"95% CI {f.ci(premature.get('ci95'))}"),
        ("hazards recovered", f.pct(recovered / fired) if fired else "–",
         f"{recovered} of {fired} firings" if fired else "no hazard firings"),
    ]  # fmt: skip
    items = "".join(
        f'<div class="card"><div class="label">{_e(label)}</div><div class="value">{_e(value)}</div>'
        f'<div class="sub">{_e(sub)}</div></div>'
        for label, value, sub in cards
    )
    return f'<div class="cards">{items}</div>'


def render_html(report: dict[str, Any]) -> str:
    sections = build(report)
    plots = all_plots(report)
    generated = _e(report.get("generated_by", "mcp-hazard"))
    version = _e(report.get("report_schema_version"))
    # Last but for the lists (unscorable traces, warnings): the per-episode table, long, and only in HTML and JSON.
    tail = [per_episode(report), *(s for s in sections if s.kind == "list")]
    main = [s for s in sections if not s.detail and s.kind != "list"]
    detail = [s for s in sections if s.detail]
    nav = " ".join(f'<a href="#{_e(s.key)}">{_e(s.title)}</a>' for s in [*main, *tail])
    body = [_section(s, plots.get(s.key)) for s in main]
    if detail:
        inner = "\n".join(_section(s, None) for s in detail)
        titles = ", ".join(s.title.removeprefix("Success by ") for s in detail)
        body.append(f'<details class="detail"><summary>Success by {_e(titles)}</summary>\n{inner}\n</details>')
    body += [_section(s, None) for s in tail]
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
        f'<p class="meta">{episodes} episodes · generated by {generated} · report schema version {version}</p>',
        f"<nav>{nav}</nav>",
        "</header>",
        _cards(report),
        *body,
        f"<footer>Generated by {generated}, report schema version {version}. Every number is defined in "
        "docs/scoring.md of mcp-hazard; intervals are 95% Wilson score intervals.</footer>",
        "</main>",
        "</body>",
        "</html>",
        "",
    ])  # fmt: skip

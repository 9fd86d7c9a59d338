"""`mcp-hazard diff RUN_A RUN_B`: which paired episodes flipped between two runs, and under which hazards.

Episodes pair as the gate pairs them (pairs.py). They are grouped by agent, condition and interface; each group
with a flip gets the exact McNemar p-value of its changes, and the groups come most evidence first (smallest p, then
most flips), so that the change a reader should look at is at the top and a lone flip in a noisy group at the end.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.scoring.gate.pairs import Pairing, check_comparable, pair_runs
from mcp_hazard.scoring.gate.runs import RunData, describe, judged
from mcp_hazard.scoring.markdown_text import code, escape
from mcp_hazard.scoring.stats import mcnemar_exact

Row = dict[str, Any]
FORMATS = ("text", "markdown", "html")


@dataclass
class Group:
    agent: str  # "naive" or "naive -> recovering" when the agents' names differ
    condition: str
    interventions: str
    pairs: int = 0
    worse: list[tuple[Row, Row]] = field(default_factory=list)  # solved in A, not in B
    better: list[tuple[Row, Row]] = field(default_factory=list)

    @property
    def p_value(self) -> float:
        return mcnemar_exact(len(self.worse), len(self.better))

    @property
    def title(self) -> str:
        where = self.condition + ("" if self.interventions == "none" else f" + {self.interventions}")
        return f"{self.agent}, {where}"


@dataclass
class Diff:
    a: RunData
    b: RunData
    groups: list[Group]
    pairing: Pairing
    notes: list[str]

    @property
    def pairs(self) -> int:
        return sum(g.pairs for g in self.groups)


def diff_runs(a: RunData, b: RunData, agents: list[str] | None = None) -> Diff:
    notes = check_comparable(b, a)
    pairing = pair_runs(b, a, agents)  # B's episodes against A's, as a gate of B with baseline A pairs them
    groups: dict[tuple[str, str, str], Group] = {}
    for (agent_b, agent_a), pairs in pairing.pairs.items():
        name = agent_b if agent_a == agent_b else f"{agent_a} -> {agent_b}"
        for row_b, row_a in pairs:
            if not (judged(row_a) and judged(row_b)):
                continue
            key = (name, str(row_b["condition"]), str(row_b.get("interventions", "none")))
            group = groups.setdefault(key, Group(*key))
            group.pairs += 1
            if row_a["correct"] and not row_b["correct"]:
                group.worse.append((row_a, row_b))
            elif row_b["correct"] and not row_a["correct"]:
                group.better.append((row_a, row_b))
    ordered = sorted(groups.values(), key=lambda g: (g.p_value, -(len(g.worse) + len(g.better)), g.title))
    return Diff(a, b, ordered, pairing, notes)


def _hazards(row: Row) -> str:
    fired = [f"{h['kind']}{'' if h.get('recovered') else ' (not recovered)'}" for h in row.get("hazards", [])]
    return ", ".join(fired) or "no hazard fired"


def _summary(diff: Diff) -> str:
    worse = sum(len(g.worse) for g in diff.groups)
    better = sum(len(g.better) for g in diff.groups)
    p = mcnemar_exact(worse, better)
    return (f"{diff.pairs} paired episodes: {worse} solved in A and not in B, {better} solved in B and not in A, "
            f"{diff.pairs - worse - better} unchanged (exact McNemar p = {p:.2g})")  # fmt: skip


def _unpaired(diff: Diff) -> list[str]:
    p = diff.pairing
    lines = [f"only in A: {len(p.only_baseline)} episodes" if p.only_baseline else "",
             f"only in B: {len(p.only_run)} episodes" if p.only_run else "",
             f"not compared (no verdict on the agent in one run): {len(p.infrastructure)} pairs"
             if p.infrastructure else ""]  # fmt: skip
    return [line for line in lines if line] + diff.notes


def _flips(group: Group) -> list[tuple[str, Row, Row]]:
    return [("worse", a, b) for a, b in group.worse] + [("better", a, b) for a, b in group.better]


def render_text(diff: Diff) -> str:
    lines = [f"A: {diff.a.path}", f"B: {diff.b.path}", _summary(diff)]
    for group in (g for g in diff.groups if g.worse or g.better):
        lines.append(f"\n{group.title}: {len(group.worse)} worse, {len(group.better)} better of {group.pairs} "
                     f"(p = {group.p_value:.2g})")  # fmt: skip
        for what, a, b in _flips(group):
            lines.append(f"  {what:6} {describe(b)}: {a['class']} -> {b['class']}; in B: {_hazards(b)}")
            lines.append(f"         A {a['trace']}\n         B {b['trace']}")
    lines += ["", *_unpaired(diff)] if _unpaired(diff) else []
    return "\n".join(lines)


def render_markdown(diff: Diff) -> str:
    e = escape  # every name, class and path comes from the runs' reports: shown as written, never as Markdown
    lines = ["## mcp-hazard diff", "", f"A: {code(str(diff.a.path))}, B: {code(str(diff.b.path))}", "",
             e(_summary(diff)), ""]  # fmt: skip
    for group in (g for g in diff.groups if g.worse or g.better):
        lines += [f"### {e(group.title)}: {len(group.worse)} worse, {len(group.better)} better of {group.pairs} "
                  f"(p = {group.p_value:.2g})", "", "| change | episode | A | B | hazards in B | trace B |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for what, a, b in _flips(group):
            lines.append(f"| {what} | {e(describe(b))} | {e(str(a['class']))} | {e(str(b['class']))} | "
                         f"{e(_hazards(b))} | {code(str(b['trace']))} |")  # fmt: skip
        lines.append("")
    lines += [f"- {e(line)}" for line in _unpaired(diff)]
    return "\n".join(lines).rstrip() + "\n"


def render_html(diff: Diff) -> str:
    e = html.escape
    parts = ["<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mcp-hazard diff</title>",
             "<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:.5em 0 2em}"
             "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}.worse{background:#fde8e8}"
             ".better{background:#e6f6e6}code{font-size:12px}</style></head><body>",
             f"<h1>mcp-hazard diff</h1><p>A: <code>{e(str(diff.a.path))}</code><br>B: "
             f"<code>{e(str(diff.b.path))}</code></p><p>{e(_summary(diff))}</p>"]  # fmt: skip
    for group in (g for g in diff.groups if g.worse or g.better):
        parts.append(f"<h2>{e(group.title)}: {len(group.worse)} worse, {len(group.better)} better of {group.pairs} "
                     f"(p = {group.p_value:.2g})</h2><table><tr><th>change</th><th>episode</th><th>A</th><th>B</th>"
                     "<th>hazards in B</th><th>traces</th></tr>")  # fmt: skip
        for what, a, b in _flips(group):
            parts.append(f"<tr class=\"{what}\"><td>{what}</td><td>{e(describe(b))}</td><td>{e(a['class'])}</td>"
                         f"<td>{e(b['class'])}</td><td>{e(_hazards(b))}</td><td><code>A {e(str(a['trace']))}"
                         f"</code><br><code>B {e(str(b['trace']))}</code></td></tr>")  # fmt: skip
        parts.append("</table>")
    parts += [f"<p>{e(line)}</p>" for line in _unpaired(diff)]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def render_diff(diff: Diff, fmt: str) -> str:
    return {"text": render_text, "markdown": render_markdown, "html": render_html}[fmt](diff)

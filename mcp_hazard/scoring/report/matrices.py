"""The sections that lead the report: one row per agent, then agent x hazard kind, agent x intervention and agent x
condition heatmaps, the hazard kinds left out of some tasks; and premature answers and success by golden-path length,
per agent.

Every cell links to the episodes behind it and carries its rate as a heat value, so the HTML report colours it;
text formats show the same cells as plain tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report.section import GREY, Filter, Heat, Section, as_dict

SETTINGS = ("clean", "hazards", "interventions")
NOT_RUN = "not run"


@dataclass
class Cell:
    text: str
    link: Filter | None = None  # the episodes behind it
    heat: Heat = None
    tip: str = ""


@dataclass
class Grid:
    """Rows of cells, gathered into the parallel lists a Section keeps."""

    rows: list[list[str]] = field(default_factory=list)
    links: list[Filter | None] = field(default_factory=list)
    cell_links: list[list[Filter | None]] = field(default_factory=list)
    heat: list[list[Heat]] = field(default_factory=list)
    tips: list[list[str]] = field(default_factory=list)

    def add(self, cells: list[Cell], link: Filter | None = None) -> None:
        self.rows.append([cell.text for cell in cells])
        self.links.append(link)
        self.cell_links.append([cell.link for cell in cells])
        self.heat.append([cell.heat for cell in cells])
        self.tips.append([cell.tip for cell in cells])

    def section(self, key: str, title: str, blurb: str, columns: list[str], empty: str, **more: Any) -> Section:
        return Section(key, title, blurb, columns, self.rows, empty, links=self.links, cell_links=self.cell_links,
                       heat=self.heat, tips=self.tips, **more)  # fmt: skip


def _agents_of(matrix: dict[str, Any]) -> list[str]:
    return sorted({agent for row in matrix.values() for agent in as_dict(row)})


def rate_cell(entry: dict[str, Any], link: Filter, label: str, *, interval: bool = False) -> Cell:
    """A rate as '50.0% (8/16)' (or '50.0% [28.0–72.0]' with `interval`), coloured by it; 'not run' without one."""
    if not entry:
        return Cell(NOT_RUN)
    detail = f.ci(entry.get("ci95")) if interval else f"({f.count(entry.get('successes'))}/{f.count(entry.get('n'))})"
    return Cell(f"{f.pct(entry.get('rate'))} {detail}", link, entry.get("rate"), f"{label}: {f.rate_with_ci(entry)}")


def agents(report: dict[str, Any]) -> Section:
    data = as_dict(report.get("agents"))
    overall = as_dict(as_dict(report.get("groups")).get("agent"))
    shown = [key for key in SETTINGS if any(as_dict(e).get(key) for e in data.values())]
    grid = Grid()
    for agent, entry in sorted(data.items()):
        entry, mine = as_dict(entry), {"agent": agent}
        cells = [Cell(f.text(agent), mine), Cell(f.count(entry.get("episodes")), mine),
                 rate_cell(as_dict(overall.get(agent)), mine, "all episodes", interval=True)]  # fmt: skip
        for key in shown:
            label = key if key == "clean" else f"under {key}"
            cells.append(rate_cell(as_dict(entry.get(key)), {**mine, "setting": key}, label, interval=True))
        recovery = as_dict(entry.get("recovery"))
        cells.append(rate_cell(recovery, {**mine, "hazards_fired": "*"}, "hazard firings recovered", interval=True)
                     if recovery else Cell("no firings", heat=GREY))  # fmt: skip
        grid.add([c if c.text != NOT_RUN else Cell(NOT_RUN, heat=GREY) for c in cells], mine)
    return grid.section(
        "agents", "Agents",
        "One row per agent, never pooled: its success rate over all its episodes, clean (original interface, no "
        "hazard), under hazards (original interface) and under interface interventions, and the share of its hazard "
        "firings it recovered from; 95% Wilson intervals. Each cell links to its episodes.",
        ["agent", "episodes", "success", *shown, "recovered"], f.no_verdict_yet(report, "No episodes."),
        numeric=set(range(1, len(shown) + 4)), scorecard=True, brief=[0, *range(2, len(shown) + 4)],
    )  # fmt: skip


def premature(report: dict[str, Any]) -> Section:
    """Premature answers per agent (uncoloured: on the success scale its good end, 0%, would read red)."""
    data = as_dict(report.get("agents"))
    rows, links = [], []
    for agent, entry in sorted(data.items()):
        entry = as_dict(as_dict(entry).get("premature"))
        if entry:
            rows.append([f.text(agent), *f.rate_cells(entry)])
            links.append({"agent": agent, "premature_reasons": "*"})
    return Section(
        "premature", "Premature answers per agent",
        "Share of each agent's episodes (judged or not) answered although a golden-path step never succeeded or a "
        "conflict was not cross-checked (premature/episodes, 95% Wilson interval). Each row links to those episodes.",
        ["agent", "episodes", "premature", "share", "95% CI"], rows, "No episodes.", numeric={1, 2, 3},
        links=links,
    )  # fmt: skip


def _recovery_cell(agent: str, kind: str, entry: dict[str, Any]) -> Cell:
    if not entry:
        return Cell(NOT_RUN, tip=f"{agent} never met {kind}")
    if not entry.get("fired"):
        return Cell(f.DID_NOT_FIRE, {"agent": agent, "hazard_kinds": kind}, GREY,
                    f"{agent}: {kind} was set but never fired")  # fmt: skip
    return Cell(
        f"{f.pct(entry.get('rate'))} ({f.count(entry.get('recovered'))}/{f.count(entry.get('fired'))})",
        {"agent": agent, "hazards_fired": kind}, entry.get("rate"),
        f"{agent}, {kind}: recovered {entry.get('recovered')} of {entry.get('fired')} firings, 95% CI "
        f"{f.ci(entry.get('ci95'))}",
    )  # fmt: skip


def recovery_matrix(report: dict[str, Any]) -> Section:
    data = as_dict(report.get("recovery_by_agent"))
    families = as_dict(report.get("recovery"))
    names = _agents_of(data)
    grid = Grid()
    for kind, row in sorted(data.items()):
        family = Cell(f.text(as_dict(families.get(kind)).get("family")))
        cells = [_recovery_cell(agent, kind, as_dict(as_dict(row).get(agent))) for agent in names]
        grid.add([Cell(f.text(kind), {"hazard_kinds": kind}), family, *cells], {"hazard_kinds": kind})
    return grid.section(
        "recovery-matrix", "Recovery by hazard kind and agent",
        "Share of each agent's hazard firings of each kind that it recovered from by the kind's recovery path "
        "(recovered/fired). \"did not fire\": the kind was set in the agent's episodes but never fired, so there is "
        "no rate; \"not run\": the agent never met the kind.",
        ["hazard kind", "family", *names], "No hazard was set in any episode (run with --hazard all).",
        numeric=set(range(2, len(names) + 2)), scorecard=True, brief=[0, *range(2, len(names) + 2)],
    )  # fmt: skip


def _irs_cell(agent: str, intervention: str, entry: dict[str, Any]) -> Cell:
    if not entry:
        return Cell(NOT_RUN)
    irs = entry.get("irs")
    return Cell(
        f"{f.ratio(irs)} ({f.pct(entry.get('accuracy_original'))} → {f.pct(entry.get('accuracy_intervened'))})",
        {"agent": agent, "interventions": intervention}, GREY if irs is None else min(float(irs), 1.0),
        f"{agent}, {intervention}: IRS {f.ratio(irs)} over {entry.get('pairs')} paired items, paired accuracy "
        f"{f.pct(entry.get('paired_accuracy'))}",
    )  # fmt: skip


def irs_matrix(report: dict[str, Any]) -> Section:
    data = as_dict(report.get("intervention_by_agent"))
    names = _agents_of(data)
    grid = Grid()
    for intervention, row in sorted(data.items()):
        link = {"interventions": intervention}
        cells = [_irs_cell(agent, intervention, as_dict(as_dict(row).get(agent))) for agent in names]
        grid.add([Cell(f.text(intervention), link), *cells], link)
    return grid.section(
        "irs-matrix", "Interface robustness (IRS) by intervention and agent",
        "Intervention Robustness Score IRS = Acc(intervened)/Acc(original interface) over the items each agent ran "
        "both ways (same task, seed, profile and hazard condition), with the two accuracies; 1.00 = no loss, – when "
        "the original accuracy is 0.",
        ["intervention", *names],
        "No item was run both with the original interface and under an intervention (run with --intervention all).",
        numeric=set(range(1, len(names) + 1)), scorecard=True,
    )  # fmt: skip


def success_matrix(report: dict[str, Any]) -> Section:
    data = as_dict(report.get("success_by_agent"))
    names = _agents_of(data)
    grid = Grid()
    for condition, row in data.items():
        link = {"condition": condition, "interventions": "none"}
        entries = [as_dict(as_dict(row).get(agent)) for agent in names]
        cells = [rate_cell(e, {**link, "agent": a}, f"{a}, {condition}") for a, e in zip(names, entries, strict=True)]
        fired = [e.get("fired") for e in entries if e]
        total = None if condition == "clean" or None in fired else sum(int(n or 0) for n in fired)
        grid.add([Cell(f.text(condition), link), *cells, Cell(f.fired(total), heat=GREY if total == 0 else None)],
                 link)  # fmt: skip
    return grid.section(
        "success-matrix", "Success by condition and agent",
        "Share of each agent's episodes under each condition (the hazards with their parameters, or clean) whose "
        "answer is right (successes/episodes), on the original interface (interventions: the IRS table). Hazard "
        "fired: firings in the condition's episodes (\"did not fire\": the condition measured no hazard).",
        ["condition", *names, "hazard fired"], f.no_verdict_yet(report, "No episode ran on the original interface."),
        numeric=set(range(1, len(names) + 2)), scorecard=True, brief=list(range(len(names) + 1)),
    )  # fmt: skip


def skipped(report: dict[str, Any]) -> Section:
    entries = [e for e in report.get("skipped_hazards") or [] if isinstance(e, dict)]
    rows = [[f.text(e.get("kind")), f"{len(e.get('tasks') or [])} of {f.count(e.get('of'))}", f.text(e.get("reason")),
             ", ".join(str(t) for t in e.get("tasks") or [])] for e in entries]  # fmt: skip
    return Section(
        "skipped-hazards", "Hazard kinds left out of some tasks",
        "A kind runs only on tasks it can act on (so that each instance is recoverable): these were left out of the "
        "tasks listed, for the reason given, or not run yet (a run stopped before it reached them: the same command "
        "again finishes it); their rates are over the other tasks.",
        ["hazard kind", "tasks left out", "why", "tasks"], rows,
        "Every hazard kind run was run on every task.", numeric={1}, scorecard=True, brief=[0, 1, 2],
        links=[{"hazard_kinds": str(e.get("kind"))} for e in entries],
    )  # fmt: skip


def compounding_by_agent(report: dict[str, Any]) -> Section:
    entries = [r for r in report.get("compounding_by_agent") or [] if isinstance(r, dict)]
    names = sorted({str(r.get("agent")) for r in entries})
    found = {(str(r.get("agent")), int(r.get("golden_length") or 0)): r for r in entries}
    grid = Grid()
    for length in sorted({length for _, length in found}):
        link = {"golden_length": str(length)}
        cells = [rate_cell(as_dict(found.get((a, length))), {**link, "agent": a}, f"{a}, length {length}")
                 for a in names]  # fmt: skip
        grid.add([Cell(str(length), link), *cells], link)
    return grid.section(
        "compounding-by-agent", "Success by golden-path length and agent",
        "Share of each agent's episodes solved at each golden-path length (calls on the reference path), all "
        "conditions pooled; per condition, with per-step success and the compounding factor, in \"Error compounding "
        "per condition\".",
        ["length", *names], "No episodes.", numeric=set(range(len(names) + 1)),
    )  # fmt: skip

"""The sections that lead the report: one row per agent, then agent x hazard kind, agent x condition and agent x
intervention heatmaps, the hazard kinds left out of some tasks, and error compounding per agent.

Every cell links to the episodes behind it and carries its rate as a heat value, so the HTML report colours it;
text formats show the same cells as plain tables.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report.sections import GREY, Filter, Heat, Section

SETTINGS = (("clean", "clean"), ("hazards", "hazards"), ("interventions", "interventions"))
NOT_RUN = "not run"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _agents_of(matrix: dict[str, Any]) -> list[str]:
    return sorted({agent for row in matrix.values() for agent in _dict(row)})


def _short_rate(entry: dict[str, Any]) -> str:
    """'50.0% (8/16)'."""
    return f"{f.pct(entry.get('rate'))} ({f.count(entry.get('successes'))}/{f.count(entry.get('n'))})"


def _tip(label: str, entry: dict[str, Any]) -> str:
    return f"{label}: {f.rate_with_ci(entry)}"


def agents(report: dict[str, Any]) -> Section:
    data = _dict(report.get("agents"))
    overall = _dict(_dict(report.get("groups")).get("agent"))
    shown = [(key, name) for key, name in SETTINGS if any(_dict(e).get(key) for e in data.values())]
    rows: list[list[str]] = []
    links: list[Filter | None] = []
    cell_links: list[list[Filter | None]] = []
    heat: list[list[Heat]] = []
    tips: list[list[str]] = []
    for agent, entry in sorted(data.items()):
        entry = _dict(entry)
        cells = [_dict(overall.get(agent)), *(_dict(entry.get(key)) for key, _ in shown), _dict(entry.get("recovery"))]
        recovery = cells[-1]
        row = [f.text(agent), f.count(entry.get("episodes"))]
        row += [f"{f.pct(c.get('rate'))} {f.ci(c.get('ci95'))}" if c else NOT_RUN for c in cells[:-1]]
        row.append(f"{f.pct(recovery.get('rate'))} {f.ci(recovery.get('ci95'))}" if recovery else "no firings")
        rows.append(row)
        links.append({"agent": agent})
        filters: list[Filter | None] = [{"agent": agent}, {"agent": agent}, {"agent": agent}]
        filters += [{"agent": agent, "setting": key} if entry.get(key) else None for key, _ in shown]
        filters.append({"agent": agent, "hazards_fired": "*"} if recovery else None)
        cell_links.append(filters)
        heat.append([None, None, *(c.get("rate") if c else GREY for c in cells)])
        names = ["all episodes", *(f"under {name}" if name != "clean" else name for _, name in shown),
                 "hazard firings recovered"]  # fmt: skip
        tips.append(["", "", *(_tip(n, c) if c else f"{n}: {NOT_RUN}" for n, c in zip(names, cells, strict=True))])
    return Section(
        "agents", "Agents",
        "Success rate of each agent over all its episodes, clean (original interface, no hazard), under hazards "
        "(original interface) and under interface interventions, and the share of its hazard firings it recovered "
        "from; 95% Wilson intervals. Each cell links to its episodes.",
        ["agent", "episodes", "success", *(name for _, name in shown), "recovered"], rows,
        "No episodes.", numeric=set(range(1, len(shown) + 4)), scorecard=True, links=links,
        brief=[0, *range(2, len(shown) + 4)],
        cell_links=cell_links, heat=heat, tips=tips,
    )  # fmt: skip


def recovery_matrix(report: dict[str, Any]) -> Section:
    data = _dict(report.get("recovery_by_agent"))
    families = _dict(report.get("recovery"))
    names = _agents_of(data)
    rows: list[list[str]] = []
    links: list[Filter | None] = []
    cell_links: list[list[Filter | None]] = []
    heat: list[list[Heat]] = []
    tips: list[list[str]] = []
    for kind, row in sorted(data.items()):
        row = _dict(row)
        cells: list[str] = []
        filters: list[Filter | None] = []
        colours: list[Heat] = []
        hover: list[str] = []
        for agent in names:
            entry = _dict(row.get(agent))
            if not entry:
                cells.append(NOT_RUN)
                filters.append(None)
                colours.append(None)
                hover.append(f"{agent} never met {kind}")
            elif not entry.get("fired"):
                cells.append(f.DID_NOT_FIRE)
                filters.append({"agent": agent, "hazard_kinds": kind})
                colours.append(GREY)
                hover.append(f"{agent}: {kind} was set but never fired")
            else:
                cells.append(f"{f.pct(entry.get('rate'))} ({f.count(entry.get('recovered'))}/"
                             f"{f.count(entry.get('fired'))})")  # fmt: skip
                filters.append({"agent": agent, "hazards_fired": kind})
                colours.append(entry.get("rate"))
                hover.append(f"{agent}, {kind}: recovered {entry.get('recovered')} of {entry.get('fired')} firings, "
                             f"95% CI {f.ci(entry.get('ci95'))}")  # fmt: skip
        family = f.text(_dict(families.get(kind)).get("family"))
        rows.append([f.text(kind), family, *cells])
        links.append({"hazard_kinds": kind})
        cell_links.append([None, None, *filters])
        heat.append([None, None, *colours])
        tips.append(["", "", *hover])
    return Section(
        "recovery-matrix", "Recovery by hazard kind and agent",
        "Share of each agent's hazard firings of each kind that it recovered from by the kind's recovery path "
        "(recovered/fired). \"did not fire\": the kind was set in the agent's episodes but never fired, so there is "
        "no rate; \"not run\": the agent never met the kind.",
        ["hazard kind", "family", *names], rows, "No hazard was set in any episode (run with --hazard all).",
        numeric=set(range(2, len(names) + 2)), scorecard=True, brief=[0, *range(2, len(names) + 2)], links=links,
        cell_links=cell_links, heat=heat, tips=tips,
    )  # fmt: skip


def success_matrix(report: dict[str, Any]) -> Section:
    data = _dict(report.get("success_by_agent"))
    names = _agents_of(data)
    rows: list[list[str]] = []
    links: list[Filter | None] = []
    cell_links: list[list[Filter | None]] = []
    heat: list[list[Heat]] = []
    tips: list[list[str]] = []
    for condition, row in data.items():
        row = _dict(row)
        entries = [_dict(row.get(agent)) for agent in names]
        fired = [e.get("fired") for e in entries if e]
        total = None if condition == "clean" or None in fired else sum(int(n or 0) for n in fired)
        rows.append([f.text(condition), *(_short_rate(e) if e else NOT_RUN for e in entries), f.fired(total)])
        links.append({"condition": condition, "interventions": "none"})
        cell_links.append([None, *({"agent": a, "condition": condition, "interventions": "none"} if e else None
                                   for a, e in zip(names, entries, strict=True)), None])  # fmt: skip
        heat.append([None, *(e.get("rate") if e else None for e in entries), GREY if total == 0 else None])
        tips.append(["", *(_tip(f"{a}, {condition}", e) if e else "" for a, e in zip(names, entries, strict=True)),
                     ""])  # fmt: skip
    return Section(
        "success-matrix", "Success by condition and agent",
        "Share of each agent's episodes under each condition (the hazards with their parameters, or clean) whose "
        "answer is right (successes/episodes), on the original interface (interventions: the IRS table). Hazard "
        "fired: firings in the condition's episodes (\"did not fire\": the condition measured no hazard).",
        ["condition", *names, "hazard fired"], rows, "No episode ran on the original interface.",
        numeric=set(range(1, len(names) + 2)),
        scorecard=True, brief=list(range(len(names) + 1)), links=links, cell_links=cell_links, heat=heat, tips=tips,
    )  # fmt: skip


def irs_matrix(report: dict[str, Any]) -> Section:
    data = _dict(report.get("intervention_by_agent"))
    names = _agents_of(data)
    rows: list[list[str]] = []
    links: list[Filter | None] = []
    cell_links: list[list[Filter | None]] = []
    heat: list[list[Heat]] = []
    tips: list[list[str]] = []
    for intervention, row in sorted(data.items()):
        row = _dict(row)
        cells: list[str] = []
        filters: list[Filter | None] = []
        colours: list[Heat] = []
        hover: list[str] = []
        for agent in names:
            entry = _dict(row.get(agent))
            if not entry:
                cells.append(NOT_RUN)
                filters.append(None)
                colours.append(None)
                hover.append("")
                continue
            irs = entry.get("irs")
            cells.append(f"{f.ratio(irs)} ({f.pct(entry.get('accuracy_original'))} → "
                         f"{f.pct(entry.get('accuracy_intervened'))})")  # fmt: skip
            filters.append({"agent": agent, "interventions": intervention})
            colours.append(GREY if irs is None else min(float(irs), 1.0))
            hover.append(f"{agent}, {intervention}: IRS {f.ratio(irs)} over {entry.get('pairs')} paired items, "
                         f"paired accuracy {f.pct(entry.get('paired_accuracy'))}")  # fmt: skip
        rows.append([f.text(intervention), *cells])
        links.append({"interventions": intervention})
        cell_links.append([None, *filters])
        heat.append([None, *colours])
        tips.append(["", *hover])
    return Section(
        "irs-matrix", "Interface robustness (IRS) by intervention and agent",
        "Intervention Robustness Score IRS = Acc(intervened)/Acc(original interface) over the items each agent ran "
        "both ways (same task, seed, profile and hazard condition), with the two accuracies; 1.00 = no loss, – when "
        "the original accuracy is 0.",
        ["intervention", *names], rows,
        "No item was run both with the original interface and under an intervention (run with --intervention all).",
        numeric=set(range(1, len(names) + 1)), scorecard=True, links=links, cell_links=cell_links, heat=heat,
        tips=tips,
    )  # fmt: skip


def skipped(report: dict[str, Any]) -> Section:
    entries = [e for e in report.get("skipped_hazards") or [] if isinstance(e, dict)]
    rows = [[f.text(e.get("kind")), f"{len(e.get('tasks') or [])} of {f.count(e.get('of'))}", f.text(e.get("reason")),
             ", ".join(str(t) for t in e.get("tasks") or [])] for e in entries]  # fmt: skip
    return Section(
        "skipped-hazards", "Hazard kinds left out of some tasks",
        "A kind runs only on tasks it can act on (so that each instance is recoverable): these were left out of the "
        "tasks listed, for the reason given; their rates are over the other tasks.",
        ["hazard kind", "tasks left out", "why", "tasks"], rows,
        "Every hazard kind run was run on every task.", numeric={1}, scorecard=True, brief=[0, 1, 2],
        links=[{"hazard_kinds": str(e.get("kind"))} for e in entries],
    )  # fmt: skip


def compounding_by_agent(report: dict[str, Any]) -> Section:
    entries = [r for r in report.get("compounding_by_agent") or [] if isinstance(r, dict)]
    names = sorted({str(r.get("agent")) for r in entries})
    lengths = sorted({int(r.get("golden_length") or 0) for r in entries})
    found = {(str(r.get("agent")), int(r.get("golden_length") or 0)): r for r in entries}
    rows: list[list[str]] = []
    cell_links: list[list[Filter | None]] = []
    heat: list[list[Heat]] = []
    tips: list[list[str]] = []
    for length in lengths:
        cells = [found.get((agent, length)) for agent in names]
        rows.append([str(length), *(_short_rate(c) if c else NOT_RUN for c in cells)])
        cell_links.append([None, *({"agent": a, "golden_length": str(length)} if c else None
                                   for a, c in zip(names, cells, strict=True))])  # fmt: skip
        heat.append([None, *(c.get("rate") if c else None for c in cells)])
        tips.append(["", *(_tip(f"{a}, length {length}", c) if c else "" for a, c in zip(names, cells, strict=True))])
    return Section(
        "compounding-by-agent", "Success by golden-path length and agent",
        "Share of each agent's episodes solved at each golden-path length (calls on the reference path), all "
        "conditions pooled; per condition, with per-step success and the compounding factor, in \"Error compounding "
        "per condition\".",
        ["length", *names], rows, "No episodes.", numeric=set(range(len(names) + 1)),
        links=[{"golden_length": str(length)} for length in lengths], cell_links=cell_links, heat=heat, tips=tips,
    )  # fmt: skip

"""The breakdowns, split by agent: success by hazard kind, hint profile, interface intervention, scenario, workflow
and task (one column per agent), recovery paths per hazard kind and agent, the failure taxonomy and efficiency of each
agent.

Pooled over agents, a run of a model that solves nothing beside the recovering agent reads "50%" in every one of
these tables and says nothing about either; split, each row compares the agents. Every share says what it is of:
a cell reads `50.0% (8/16)`, and the taxonomy has a column naming its denominator.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report.matrices import NOT_RUN, Cell, Grid, rate_cell
from mcp_hazard.scoring.report.section import GREY, Filter, Section, as_dict

FOLD = 20
GROUPS = {  # dimension -> (title, what a row is, detail)
    "hazard_kind": ("Success by hazard kind and agent",
                    "hazard kind (an episode counts for every kind in its condition; clean episodes as clean)", False),
    "profile": ("Success by hint profile and agent",
                "hint profile (strict: errors say what is wrong; guided: they also suggest a recovery)", False),
    "intervention": ("Success by interface intervention and agent", "interface change (none = original)", False),
    "scenario": ("Success by scenario and agent", "scenario file, over all its tasks and conditions", True),
    "workflow": ("Success by workflow kind and agent", "kind of task workflow", True),
    "task": ("Success by task and agent", "task (scenario/task), over all conditions", True),
}  # fmt: skip
FILTER_FIELDS = {"hazard_kind": "hazard_kinds", "profile": "profile", "intervention": "interventions",
                 "scenario": "scenario", "workflow": "workflow", "task": "item"}  # fmt: skip


def _same_as_conditions(groups: dict[str, Any]) -> bool:
    """True when every condition is one hazard kind with its defaults: then success by hazard kind would repeat
    success by condition row for row."""
    conditions, kinds = as_dict(groups.get("condition")), as_dict(groups.get("hazard_kind"))
    return set(conditions) == set(kinds) and all(
        as_dict(conditions[k]).get("n") == as_dict(kinds[k]).get("n") for k in kinds
    )


def group_matrix(report: dict[str, Any], name: str) -> Section | None:
    """Success per group and agent; None when it would say nothing new (one group only, or by hazard kind when it
    repeats success by condition)."""
    title, what, detail = GROUPS[name]
    data = as_dict(as_dict(report.get("groups_by_agent")).get(name))
    if len(data) < (1 if name == "hazard_kind" else 2):
        return None
    if name == "hazard_kind" and _same_as_conditions(as_dict(report.get("groups"))):
        return None
    names = sorted({agent for row in data.values() for agent in as_dict(row)})
    keys = sorted(data, key=lambda k: (k != "clean", k))
    grid = Grid()
    for key in keys:
        link = {FILTER_FIELDS[name]: key}
        row = as_dict(data[key])
        cells = [rate_cell(as_dict(row.get(a)), {**link, "agent": a}, f"{a}, {key}") for a in names]
        cells = [c if c.text != NOT_RUN else Cell(NOT_RUN, heat=GREY) for c in cells]
        if name == "hazard_kind":
            fired = None if key == "clean" else sum(int(as_dict(e).get("fired") or 0) for e in row.values())
            cells.append(Cell(f.fired(fired), heat=GREY if fired == 0 else None))
        grid.add([Cell(f.text(key), link), *cells], link)
    extra = ["hazard fired"] if name == "hazard_kind" else []
    blurb = f"Share of each agent's episodes solved (successes/episodes) per {what}."
    if name == "hazard_kind":
        blurb += ' Hazard fired: firings in those episodes ("did not fire": the kind measured no hazard).'
    return grid.section(
        f"by-{name.replace('_', '-')}", title, blurb, [name.replace("_", " "), *names, *extra], "No episodes.",
        numeric=set(range(1, len(names) + 1 + len(extra))), detail=detail, fold=FOLD,
    )  # fmt: skip


def group_matrices(report: dict[str, Any], *, detail: bool) -> list[Section]:
    """The main groups (detail=False) or the long per-scenario, workflow and task ones (detail=True). By condition,
    by agent and by golden-path length are in matrices.py."""
    found = [group_matrix(report, name) for name, (_, _, deep) in GROUPS.items() if deep == detail]
    return [section for section in found if section is not None]


def fired_cells(fired: Any, recovered: Any, rate: Any, bounds: Any) -> list[str]:
    """[fired, recovered, rate, CI]; a hazard that never fired has no rate, only "did not fire"."""
    if fired == 0 and not isinstance(fired, bool):
        return ["0", f.MISSING, f.DID_NOT_FIRE, f.MISSING]
    return [f.count(fired), f.count(recovered), f.pct(rate), f.ci(bounds)]


def recovery(report: dict[str, Any]) -> Section:
    families = as_dict(report.get("recovery"))
    rows, links = [], []
    for kind, row in sorted(as_dict(report.get("recovery_by_agent")).items()):
        for agent, entry in sorted(as_dict(row).items()):
            entry = as_dict(entry)
            cells = fired_cells(entry.get("fired"), entry.get("recovered"), entry.get("rate"), entry.get("ci95"))
            rows.append([f.text(kind), f.text(as_dict(families.get(kind)).get("family")), f.text(agent), *cells,
                         f.paths(entry.get("paths")), f.ratio(entry.get("mean_calls_to_recover"), 1)])  # fmt: skip
            field = "hazards_fired" if entry.get("fired") else "hazard_kinds"
            links.append({"agent": str(agent), field: str(kind)})
    return Section(
        "recovery", "Recovery paths per hazard kind and agent",
        "Share of each agent's injected hazard instances it recovered from by the kind's recovery path "
        "(recovered/fired), the paths taken, and the mean tool calls after the affected call up to the recovering "
        "one. A kind set in the agent's episodes that never fired reads \"did not fire\": it has no recovery rate.",
        ["hazard kind", "family", "agent", "fired", "recovered", "rate", "95% CI", "paths", "mean calls"], rows,
        "No hazard firings.", numeric={3, 4, 5, 8}, fold=FOLD, links=links,
    )  # fmt: skip


def failures(report: dict[str, Any]) -> Section:
    rows: list[list[str]] = []
    links: list[Filter | None] = []
    for agent, entry in sorted(as_dict(report.get("failures_by_agent")).items()):
        entry = as_dict(entry)
        for level, key, field, unit in (("failed call", "calls", "call_failures", "failed calls"),
                                        ("episode", "episodes", "class", "episodes")):  # fmt: skip
            counts = {str(k): int(v or 0) for k, v in as_dict(entry.get(key)).items()}
            total = sum(counts.values())
            for name, n in counts.items():
                rows.append([f.text(agent), level, f.text(name), str(n), f.pct(n / total), f"{total} {unit}"])
                links.append({"agent": str(agent), field: name})
    return Section(
        "failures", "Failure taxonomy",
        "Per agent: each failed tool call gets one class, and each episode one outcome (solved, agent_crashed, "
        "endpoint_error, timeout, no_answer, gave_up, invented, wrong_answer); a share is of the agent's failed calls "
        "or of its judged episodes, as the last column says. Episodes whose server crashed are counted apart "
        "(Overall), not here.",
        ["agent", "level", "class", "count", "share", "of"], rows, "No calls and no episodes.", numeric={3, 4},
        links=links, link_column=2,
    )  # fmt: skip


def efficiency(report: dict[str, Any]) -> Section:
    data = as_dict(report.get("efficiency_by_agent"))
    rows = [
        [f.text(agent), f.count(as_dict(e).get("episodes")), f.count(as_dict(e).get("calls")),
         f.count(as_dict(e).get("golden_calls")), f.ratio(as_dict(e).get("calls_per_golden_call")),
         f.count(as_dict(e).get("redundant_calls"))]
        for agent, e in sorted(data.items())
    ]  # fmt: skip
    return Section(
        "efficiency", "Efficiency",
        "Per agent: tool calls made (submit_answer not counted) against the golden paths' length over its episodes; "
        "a redundant call repeats an earlier successful call with identical arguments.",
        ["agent", "episodes", "tool calls", "golden-path calls", "calls per golden call", "redundant calls"], rows,
        "No efficiency data.", numeric={1, 2, 3, 4, 5}, links=[{"agent": str(agent)} for agent in sorted(data)],
    )  # fmt: skip

"""The report as a list of sections, shared by every format: `build` returns them in reading order.

The table, Markdown and HTML renderers only lay these out, so the three always show the same numbers with the same
wording. This module holds the overall counts and the tables already kept per agent (agent outcomes, recovery per
condition, robustness, hint gain, pass^k, compounding); the heatmaps that lead the report are in matrices.py, the
breakdowns split by agent in splits.py and the research quantities in research.py. A new table is a new Section
(section.py) returned by `build`: every renderer shows it with no code of its own.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.scenario.suite_id import describe as describe_suite
from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report import matrices, splits
from mcp_hazard.scoring.report.attacks import attacks
from mcp_hazard.scoring.report.research import build_research
from mcp_hazard.scoring.report.section import Section, as_dict, dict_rows
from mcp_hazard.scoring.rules import INFRASTRUCTURE

FOLD = 20  # longer tables are folded (HTML, Markdown) and left to --verbose in the terminal
REORDER_BLURB = (
    " Reorder: cannot bite an agent that passes arguments by name (MCP arguments are named); naive-positional, which "
    "binds by position, shows its effect."
)


def headline(report: dict[str, Any]) -> Section:
    """What was run, in counts: no rate here, since a rate pooled over agents describes none of them."""
    groups = as_dict(report.get("groups"))
    agents = sorted(as_dict(report.get("agent_outcomes")) or as_dict(groups.get("agent")))  # judged or not
    conditions = {str(r.get("condition")) for r in dict_rows(report.get("per_episode"))} or set(
        as_dict(groups.get("condition"))
    )  # every episode's, with a verdict or not
    firings = sum(int(as_dict(entry).get("n") or 0) for entry in as_dict(report.get("recovery")).values())
    rows = [
        ["episodes", f.count(report.get("episodes"))],
        ["suite", describe_suite(as_dict(report.get("suite")))],
        ["agents", ", ".join(f.text(a) for a in agents) if 0 < len(agents) <= 6 else str(len(agents))],
        ["conditions", str(len(conditions))],
        ["hazard firings", str(firings) if firings else "none"],
    ]
    not_judged = report.get("not_judged")
    if isinstance(not_judged, int) and not_judged:
        shown = f"{not_judged} (tasks with no expected answer: in no success rate; recovery and failures count)"
        rows.insert(1, ["not judged", shown])
    infrastructure = as_dict(report.get("infrastructure"))
    crashed = infrastructure.get("server_crashed")
    if isinstance(crashed, int) and crashed:
        shown = f"{crashed} (the server died under the agent: in no rate, not the agent's doing; a rerun retries them)"
        rows.insert(1, ["server crashes", shown])
    unfinished = report.get("unfinished")
    if isinstance(unfinished, int) and unfinished:
        shown = (f"{unfinished} (no episode_ended: still served, or its server was stopped first; no verdict, in no "
                 "success rate; recovery and failures so far count)")  # fmt: skip
        rows.insert(1, ["unfinished", shown])
    interrupted = infrastructure.get("interrupted")
    if isinstance(interrupted, int) and interrupted:
        shown = (f"{interrupted} (the run was stopped before they ended: in no rate, not the agent's doing; the same "
                 "run command runs them again; listed under Warnings)")  # fmt: skip
        rows.insert(1, ["interrupted", shown])
    unscorable = report.get("unscorable")
    if isinstance(unscorable, list) and unscorable:
        rows.append(["unscorable traces", f"{len(unscorable)} (not in any number of this report; listed below)"])
    return Section(
        "headline", "Overall",
        "What this report covers. Every rate is given per agent (Agents, and a column or row per agent in every "
        "table): pooled over agents, a model that solves nothing beside one that solves everything reads 50%. "
        "Success = the submitted answer matches the task's expected answer. Premature = answered although a "
        "golden-path step never succeeded or a conflict was not cross-checked. Intervals are 95% Wilson intervals.",
        ["measure", "value"], rows, "No episodes.", kind="facts",
    )  # fmt: skip


def agent_outcomes(report: dict[str, Any]) -> Section:
    data = as_dict(report.get("agent_outcomes"))
    outcomes: list[str] = []
    for entry in data.values():
        outcomes += [k for k in as_dict(entry) if k != "episodes" and k not in outcomes]
    # The outcomes that are ours (a server crash, a stopped run) get a column only when some episode had one.
    outcomes = [k for k in outcomes if k not in INFRASTRUCTURE or any(as_dict(e).get(k) for e in data.values())]
    rows = [
        [f.text(agent), f.count(as_dict(entry).get("episodes")), *(f.count(as_dict(entry).get(k, 0)) for k in outcomes)]
        for agent, entry in sorted(data.items())
    ]
    stopped = any(as_dict(e).get(k) for e in data.values() for k in outcomes if k not in ("finished", "unknown"))
    known = any(as_dict(e).get(k) for e in data.values() for k in outcomes if k != "unknown")
    why = "Every episode finished: no agent crashed, lost its model endpoint or timed out, and no server crashed."
    if not known:
        why = "Not recorded: these traces were not made by `mcp-hazard run`, which records how each agent's run ended."
    return Section(
        "agent-outcomes", "Agent outcomes",
        "How each agent's runs ended: finished, or stopped early (agent_crashed, endpoint_error, timeout), or "
        "server_crashed (its server died under it), or interrupted (the run was stopped before the episode ended). "
        "Stopped episodes count as failures in every success rate; server_crashed and interrupted ones in none "
        "(infrastructure, not the agent).",
        ["agent", "episodes", *outcomes], rows if stopped else [], why if data else "No episodes.",
        numeric=set(range(1, len(outcomes) + 2)), scorecard=True,
        links=[{"agent": agent} for agent in sorted(data)],
        cell_links=[[None, None, *({"agent": agent, "agent_outcome": k} for k in outcomes)] for agent in sorted(data)],
    )  # fmt: skip


def recovery_by_condition(report: dict[str, Any]) -> Section | None:
    """Per agent and condition; None when every condition is one hazard kind (the recovery matrix says it all)."""
    entries = dict_rows(report.get("recovery_by_condition"))
    if {str(r.get("condition")) for r in entries} <= set(as_dict(report.get("recovery"))):
        return None
    rows = [
        [f.text(r.get("agent")), f.text(r.get("condition")), f.count(r.get("episodes")),
         *splits.fired_cells(r.get("fired"), r.get("recovered"), r.get("rate"), r.get("ci95"))]
        for r in dict_rows(report.get("recovery_by_condition"))
    ]  # fmt: skip
    return Section(
        "recovery-by-condition", "Recovery per agent and condition",
        "Hazard firings in each agent's episodes under each hazard condition and the share recovered from; "
        "\"did not fire\" when the condition's hazards fired in none of them (no rate).",
        ["agent", "condition", "episodes", "fired", "recovered", "rate", "95% CI"], rows,
        "No hazard conditions.", numeric={2, 3, 4, 5, 6}, fold=FOLD,
        links=[{"agent": str(r.get("agent")), "condition": str(r.get("condition"))} for r in entries],
    )  # fmt: skip


def _ratio_rows(rows: Any, dimension: str, base: str, changed: str) -> list[list[str]]:
    """Rows of a robustness table: agent, profile, the `dimension` value, items, the two accuracies, ratio, paired,
    MDE."""
    return [
        [f.text(r.get("agent")), f.text(r.get("profile")), f.text(r.get(dimension)), f.count(r.get("pairs")),
         f.pct(r.get(base)), f.pct(r.get(changed)), f.ratio(r.get("robustness_ratio")), f.pct(r.get("paired_accuracy")),
         f.mde(r.get("mde"))]
        for r in dict_rows(rows)
    ]  # fmt: skip


def robustness(report: dict[str, Any]) -> Section:
    entries = dict_rows(report.get("robustness"))
    rows = _ratio_rows(entries, "condition", "accuracy_clean", "accuracy_condition")
    for row, entry in zip(rows, entries, strict=True):
        row.append(f.fired(entry.get("fired")))
    return Section(
        "robustness", "Robustness",
        "Clean, cond.: accuracy clean and under the condition. Robustness ratio = Acc(condition)/Acc(clean) over "
        "items run both ways (1.00 = no loss; – when clean accuracy is 0). Paired accuracy = share of items solved "
        "both clean and under the condition. Fired: hazard firings in those items under the condition (\"did not "
        "fire\": the ratio measures no hazard)." + f.MDE_BLURB,
        ["agent", "profile", "condition", "items", "clean", "cond.", "ratio", "paired", "MDE", "fired"], rows,
        "No item was run both clean and under a condition (run with --hazard).", numeric={3, 4, 5, 6, 7, 8},
        fold=FOLD,
        links=[{"agent": str(r.get("agent")), "profile": str(r.get("profile")), "condition": str(r.get("condition"))}
               for r in entries],
    )  # fmt: skip


def intervention_robustness(report: dict[str, Any]) -> Section:
    entries = dict_rows(report.get("intervention_robustness"))
    reorder = any("reorder" in str(r.get("intervention")).split("+") for r in entries)
    return Section(
        "intervention-robustness", "Robustness to interface interventions",
        "Original, intervened: accuracy with the authored interface and under the intervention. Robustness ratio = "
        "Acc(intervened)/Acc(original interface) over items run both ways under the same "
        "condition (1.00 = no loss; – when the original accuracy is 0). Paired accuracy = share of items solved "
        "both with the original interface and the intervened one." + f.MDE_BLURB + (REORDER_BLURB if reorder else ""),
        ["agent", "profile", "intervention", "items", "original", "intervened", "ratio", "paired", "MDE"],
        _ratio_rows(entries, "intervention", "accuracy_original", "accuracy_intervened"),
        "No item was run both with the original interface and under an intervention (run with --intervention all).",
        numeric={3, 4, 5, 6, 7, 8}, fold=FOLD,
        links=[{"agent": str(r.get("agent")), "profile": str(r.get("profile")),
                "interventions": str(r.get("intervention"))} for r in entries],
    )  # fmt: skip


def hint_gain(report: dict[str, Any]) -> Section:
    rows = [
        [f.text(r.get("agent")), f.text(r.get("condition")), f.count(r.get("pairs")), f.pct(r.get("accuracy_strict")),
         f.pct(r.get("accuracy_guided")), f.points(r.get("gain")), f.count(r.get("newly_solved")),
         f.count(r.get("regressions")), f.mde(r.get("mde"))]
        for r in dict_rows(report.get("hint_gain"))
    ]  # fmt: skip
    return Section(
        "hint-gain", "Hint gain",
        "Accuracy with guided errors minus accuracy with strict ones, over items run in both profiles; newly solved "
        "= solved only with hints, regressions = solved strict but failed guided."
        + f.MDE_BLURB.replace("drop", "change"),
        ["agent", "condition", "items", "acc. strict", "acc. guided", "gain", "newly solved", "regressions", "MDE"],
        rows, "No item was run in both hint profiles (run with --profile strict,guided).",
        numeric={2, 3, 4, 5, 6, 7, 8},
        fold=FOLD, links=[{"agent": str(r.get("agent")), "condition": str(r.get("condition"))}
                          for r in dict_rows(report.get("hint_gain"))],
    )  # fmt: skip


def pass_k(report: dict[str, Any]) -> Section:
    """Only when some item ran more than once: with k = 1 both numbers are the success rate again."""
    entries = dict_rows(report.get("pass_k"))
    if all(r.get("k") == 1 for r in entries):
        entries = []
    rows = [
        [f.text(r.get("agent")), f.text(r.get("condition")), f.text(r.get("profile")), f.text(r.get("intervention")),
         f.count(r.get("k")), f.count(r.get("items")), f.pct(r.get("pass_at_k")), f.pct(r.get("pass_hat_k"))]
        for r in entries
        if r.get("over", "seeds") == "seeds"
    ]  # fmt: skip
    return Section(
        "pass-k", "pass@k and pass^k over seeds",
        "Over the seeds run for each item: pass@k = chance at least one of k attempts succeeds; pass^k = chance all "
        "k attempts succeed (averaged over items).",
        ["agent", "condition", "profile", "intervention", "k", "items", "pass@k", "pass^k"], rows,
        "Every item ran once: pass@k and pass^k need several seeds per item (run with --seeds 0-4).",
        numeric={4, 5, 6, 7}, fold=FOLD,
        links=[{"agent": str(r.get("agent")), "condition": str(r.get("condition")), "profile": str(r.get("profile")),
                "interventions": str(r.get("intervention"))} for r in entries],
    )  # fmt: skip


def decay(report: dict[str, Any]) -> Section:
    """The decay curve (scoring/decay.py) as a table: one column per k, one row per agent and attempt kind."""
    entries = dict_rows(report.get("decay"))
    curves: dict[tuple[str, str], dict[int, Any]] = {}
    items: dict[tuple[str, str], Any] = {}
    for r in entries:
        key = (f.text(r.get("agent")), f.text(r.get("over")))
        if isinstance(r.get("k"), int):
            curves.setdefault(key, {})[r["k"]] = r.get("pass_hat_k")
        items[key] = r.get("items")
    ks = sorted({k for curve in curves.values() for k in curve})
    rows = [[agent, over, f.count(items[(agent, over)]), *(f.pct(curve.get(k)) for k in ks)]
            for (agent, over), curve in sorted(curves.items())]  # fmt: skip
    return Section(
        "decay", "Decay curve: pass^k per agent",
        "pass^k = chance that k attempts at an item all succeed (unbiased estimator C(c,k)/C(n,k), averaged over "
        "the agent's items, every condition pooled). Over seeds: the first trial under each seed; over repeats: the "
        "trials of one item under one seed (run --repeats K). A flat curve is a reliable agent; a falling one "
        "succeeds by luck.",
        ["agent", "over", "items", *(f"k={k}" for k in ks)], rows,
        "No item was attempted twice: the curve needs several seeds (--seeds 0-4) or repeats (--repeats 3).",
        numeric=set(range(2, 3 + len(ks))), fold=FOLD,
    )  # fmt: skip


def compounding(report: dict[str, Any]) -> Section:
    entries = dict_rows(report.get("compounding"))
    rows = [
        [f.text(r.get("agent")), f.text(r.get("profile")), f"{f.text(r.get('kind'))}: {f.text(r.get('stressor'))}",
         f.text(r.get("length")), f.count(r.get("pairs")), f.pct(r.get("accuracy_base")),
         f.pct(r.get("accuracy_changed")), f.ratio(r.get("irs")), f.ratio(r.get("compounding_factor"))]
        for r in entries
    ]  # fmt: skip
    return Section(
        "compounding", "Error compounding by golden-path length",
        "Per stressor (an intervention against the authored interface, or a hazard condition against clean) and "
        "golden-path length L (1, 2, 3, 4+): IRS(L) = Acc(changed, L)/Acc(base, L) over items run both ways; "
        "compounding factor = IRS(1)/IRS(L) (1 = no compounding, above 1 = the stressor hurts longer tasks more; "
        "paper 000, section 4.4). pooled = the mean IRS(L) over the stressors of one kind.",
        ["agent", "profile", "stressor", "length", "items", "acc. base", "acc. changed", "IRS", "factor"], rows,
        "No item was run both ways.", numeric={4, 5, 6, 7, 8}, detail=True, fold=FOLD,
        links=[{"agent": str(r.get("agent")), "profile": str(r.get("profile"))} for r in entries],
    )  # fmt: skip


def unscorable(report: dict[str, Any]) -> Section:
    items = report.get("unscorable")
    rows = [[f"{f.text(as_dict(u).get('trace'))}: {f.text(as_dict(u).get('reason'))}"] for u in dict_rows(items)]
    return Section("unscorable", "Unscorable traces",
                   "Traces that were found but could not be scored; they are in no number of this report.",
                   ["trace"], rows, "None.", kind="list")  # fmt: skip


def warnings(report: dict[str, Any]) -> Section:
    items = report.get("warnings")
    rows = [[f.text(w)] for w in items] if isinstance(items, list) else []
    return Section("warnings", "Warnings", "Damaged or unusable input; every other trace was still scored.",
                   ["warning"], rows, "No warnings.", kind="list")  # fmt: skip


def build(report: dict[str, Any]) -> list[Section]:
    """Every section, in reading order: the answer first (per agent, then the heatmaps), breakdowns after, then the
    research quantities (report/research.py)."""
    found = [
        matrices.agents(report),
        matrices.recovery_matrix(report),
        matrices.irs_matrix(report),
        matrices.success_matrix(report),
        matrices.skipped(report),
        headline(report),
        matrices.premature(report),
        *splits.group_matrices(report, detail=False),
        agent_outcomes(report),
        splits.recovery(report),
        attacks(report),
        recovery_by_condition(report),
        robustness(report),
        intervention_robustness(report),
        hint_gain(report),
        pass_k(report),
        decay(report),
        matrices.compounding_by_agent(report),
        *build_research(report),
        splits.failures(report),
        splits.efficiency(report),
        compounding(report),
        *splits.group_matrices(report, detail=True),
        unscorable(report),
        warnings(report),
    ]
    # An empty list (no unscorable traces, no warnings) is no news: left out, where an empty table says why.
    return [section for section in found if section is not None and (section.rows or section.kind != "list")]

"""Report sections for the research quantities (scoring/structure.py, scoring/paired.py): one Section each, in the
shared Section model, and only when the run has data for it (a plain run does not list a dozen empty tables).
docs/research.md maps each to the paper it follows."""

from __future__ import annotations

from typing import Any

from mcp_hazard.scoring.call_taxonomy import CLASSES
from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report.section import Section, as_dict, dict_rows


def p_value(value: Any) -> str:
    """An exact test's p-value: 'p<0.001', else three decimals; '–' when missing."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return f.MISSING
    return "p<0.001" if value < 0.001 else f"p={value:.3f}"


def _points_ci(bounds: Any) -> str:
    """[-0.1, 0.25] -> '[-10.0, +25.0] pp'."""
    if not isinstance(bounds, list | tuple) or len(bounds) != 2 or None in bounds:
        return f.MISSING
    return f"[{bounds[0] * 100:+.1f}, {bounds[1] * 100:+.1f}] pp"


def structure(report: dict[str, Any]) -> list[Section]:
    data = as_dict(report.get("structure"))
    out = []
    for key, title, what in (
        ("core", "Success by core count", "core count = calls on the golden path (FuncBenchGen's n_core)"),
        ("depth", "Success by dependency depth",
         "depth = edges on the longest chain of golden calls that read each other's results (FuncBenchGen's d: 0 "
         "for one call, 1 for a star)"),
    ):  # fmt: skip
        rows = [[f.text(r.get("agent")), f.count(r.get(key)), *f.rate_cells(r)] for r in dict_rows(data.get(key))]
        if rows:
            out.append(Section(
                f"by-{key}", title, f"Success per agent by {what}, over clean episodes on the authored interface "
                "(paper 003).", ["agent", key, "episodes", "successes", "success", "95% CI"], rows, "No episodes.",
                numeric={1, 2, 3, 4}, detail=True,
            ))  # fmt: skip
    return out


def value_taxonomy(report: dict[str, Any]) -> list[Section]:
    rows = []
    for r in dict_rows(report.get("value_taxonomy")):
        calls, shares = as_dict(r.get("calls")), as_dict(r.get("call_shares"))
        firsts, first_shares = as_dict(r.get("episodes")), as_dict(r.get("episode_shares"))
        of_calls, of_episodes = f.count(r.get("classified_calls")), f.count(r.get("classified_episodes"))
        for name in CLASSES:
            rows.append([
                f.text(r.get("agent")), f.count(r.get("failed_episodes")), name, f.count(calls.get(name)),
                f"{f.pct(shares.get(name))} of {of_calls}", f.count(firsts.get(name)),
                f"{f.pct(first_shares.get(name))} of {of_episodes}",
            ])  # fmt: skip
    if not any(row[3] != "0" for row in rows):
        return []
    return [Section(
        "value-taxonomy", "Failure types of calls (FuncBenchGen)",
        "Every call of every failed episode, classified by the values the agent had been shown before it (prompt, "
        "results, errors): non-existent function, wrong argument count, use of an unknown value (never shown), use "
        "of an incorrect value (shown, but not the golden call's). A share of calls is of the agent's classified calls "
        "(\"of N\"); a share of episodes is of its failed episodes that have a classified call, by the class of the "
        "first one (paper 003's failure table). Failed episodes with no classified call (a call rejected by a hazard "
        "gets no class) are in neither.",
        ["agent", "failed episodes", "class", "calls", "share of calls", "episodes (first)", "share of episodes"], rows,
        "No failed episode.", numeric={1, 3, 4, 5, 6},
    )]  # fmt: skip


def trajectory(report: dict[str, Any]) -> list[Section]:
    rows = []
    for r in dict_rows(report.get("trajectory")):
        single, multi = as_dict(r.get("final_call")), as_dict(r.get("relaxed_sequence"))
        answer = as_dict(r.get("answer"))
        rows.append([f.text(r.get("agent")), f.text(r.get("profile")), f.text(r.get("intervention")),
                     f.count(single.get("n")), f.pct(single.get("rate")), f.count(multi.get("n")),
                     f.pct(multi.get("rate")), f.pct(answer.get("rate"))])  # fmt: skip
    if not rows:
        return []
    return [Section(
        "trajectory", "Trajectory match (CIB)",
        "Over clean episodes: single-step tasks whose final tool call (name and arguments, mapped back through the "
        "intervention) is the golden call; multi-step tasks whose successful calls are the golden calls in an order "
        "the dependencies allow, independent calls in any order (paper 000, section 3.3); beside correct answers.",
        ["agent", "profile", "intervention", "single-step", "exact final call", "multi-step", "relaxed sequence",
         "answer correct"], rows, "No clean episodes.", numeric={3, 4, 5, 6, 7},
    )]  # fmt: skip


def intervention_effects(report: dict[str, Any]) -> list[Section]:
    data = as_dict(report.get("intervention_effects"))
    rows = [
        [f.text(r.get("agent")), f.text(r.get("profile")), f.text(r.get("intervention")), f.count(r.get("pairs")),
         f.pct(r.get("accuracy_before")), f.pct(r.get("accuracy_after")), f.pct(r.get("drop")),
         f"{f.count(r.get('only_before'))}/{f.count(r.get('only_after'))} {p_value(r.get('p_value'))}",
         f.mde(r.get("mde")), f.text(r.get("note")) if r.get("note") else ""]
        for r in dict_rows(data.get("per_intervention"))
    ]  # fmt: skip
    if not rows:
        return []
    means = [[f.text(r.get("agent")), f.text(r.get("profile")), f.count(r.get("interventions")),
              f.count(r.get("items")), f.pct(r.get("mean_drop")), f.ci(r.get("ci95"))]
             for r in dict_rows(data.get("mean_drop"))]  # fmt: skip
    return [
        Section(
            "intervention-effects", "Drop per intervention (CIB)",
            "Drop = 1 - Acc(intervened)/Acc(original) over items run both ways (paper 000, section 4.3). McNemar: "
            "items solved only on the original / only under the intervention, and the two-sided exact test's p "
            "against the baseline. Reorder cannot bite an agent that passes arguments by name (MCP arguments are "
            "named); naive-positional binds by position and shows its effect." + f.MDE_BLURB,
            ["agent", "profile", "intervention", "items", "acc. original", "acc. intervened", "drop", "McNemar",
             "MDE", "note"], rows, "No intervention.", numeric={3, 4, 5, 6, 8},
        ),
        Section(
            "mean-drop", "Mean drop across interventions (CIB)",
            "Per agent, the mean of the drops over its interventions, with a 95% interval by the delta method over "
            "items (each item's baseline against its mean under the interventions) (paper 000, section 4.1).",
            ["agent", "profile", "interventions", "items", "mean drop", "95% CI"], means, "No intervention.",
            numeric={2, 3, 4},
        ),
    ]  # fmt: skip


def agent_groups(report: dict[str, Any]) -> list[Section]:
    data = as_dict(report.get("agent_groups"))
    rows = [[f.text(r.get("group")), ", ".join(f.text(a) for a in r.get("agents") or []),
             f.pct(r.get("baseline_accuracy")), f.ratio(r.get("mean_irs")), f.ratio(r.get("irs_variance"), 3)]
            for r in dict_rows(data.get("groups"))]  # fmt: skip
    if not rows:
        return []
    ratios = [[f"{f.text(r.get('higher'))} / {f.text(r.get('lower'))}", f"{f.ratio(r.get('ratio'))}x"]
              for r in dict_rows(data.get("ratios"))]  # fmt: skip
    return [
        Section(
            "agent-groups", "Agent groups (CIB contamination table)",
            "Agents grouped by --agent-label: baseline accuracy on the authored interface, mean IRS (over the "
            "group's agents, each the mean of its IRS over interventions) and the variance of those agent means "
            "(paper 000, section 4.2).",
            ["group", "agents", "baseline", "mean IRS", "IRS variance"], rows, "No labelled agents.",
            numeric={2, 3, 4},
        ),
        Section("group-ratios", "Mean IRS ratio between groups", "Higher mean IRS / lower mean IRS.",
                ["groups", "ratio"], ratios, "Fewer than two groups with an IRS.", kind="facts"),
    ]  # fmt: skip


def name_policies(report: dict[str, Any]) -> list[Section]:
    data = as_dict(report.get("name_policies"))
    rows = [[f.text(r.get("agent")), f.text(r.get("profile")), f.text(r.get("policy")), f.count(r.get("items")),
             f.pct(r.get("accuracy")), f.pct(r.get("modified_accuracy")), f.text(r.get("reference"))]
            for r in dict_rows(data.get("policies"))]  # fmt: skip
    if not rows:
        return []
    differences = [
        [f.text(r.get("agent")), f.text(r.get("profile")), f"{f.text(r.get('after'))} - {f.text(r.get('before'))}",
         f.count(r.get("pairs")), f.pct(r.get("accuracy_before")), f.pct(r.get("accuracy_after")),
         f.points(r.get("difference")), _points_ci(r.get("ci95")), p_value(r.get("p_value")), f.mde(r.get("mde"))]
        for r in dict_rows(data.get("differences"))
    ]  # fmt: skip
    return [
        Section(
            "name-policies", "Name policies (interventional reasoning)",
            "Accuracy per name policy over items (task x seed) run under more than one; modified accuracy = share "
            "solved under the policy and under the reference names too (paper 002, eq. 3).",
            ["agent", "profile", "policy", "items", "accuracy", "modified acc.", "reference"], rows,
            "No item run under two name policies.", numeric={3, 4, 5},
        ),
        Section(
            "name-policy-differences", "Paired differences between name policies",
            "Accuracy under one policy minus another on the same items, Newcombe's 95% interval and the exact "
            "McNemar test; memorised relations show as a drop on contradicting (paper 002, RQ2)." + f.MDE_BLURB,
            ["agent", "profile", "difference", "items", "acc. before", "acc. after", "difference", "95% CI", "p",
             "MDE"], differences, "No item run under two name policies.", numeric={3, 4, 5, 6, 8, 9},
        ),
    ]  # fmt: skip


def gains(report: dict[str, Any]) -> list[Section]:
    out = []
    for key, profile, title, what in (
        ("hint_gain_by_family", "guided", "Hint gain per hazard family",
         "accuracy with guided errors (recovery hints) minus strict"),
        ("harness_gain_by_family", "guarded", "Harness gain per hazard family",
         "accuracy under the guarded harness (answers refused while evidence is incomplete or contradictory, then "
         "canonicalised) minus strict; refused = submissions the harness turned away"),
    ):  # fmt: skip
        rows = [[f.text(r.get("agent")), f.text(r.get("family")), f.count(r.get("pairs")),
                 f.pct(r.get("accuracy_before")), f.pct(r.get("accuracy_after")), f.points(r.get("gain")),
                 _points_ci(r.get("ci95")), p_value(r.get("p_value")), f.count(r.get("refused_answers")),
                 f.mde(r.get("mde"))]
                for r in dict_rows(report.get(key))]  # fmt: skip
        if rows:
            out.append(Section(
                key.replace("_", "-"), title,
                f"Per agent and hazard family (an episode counts for each family of its condition): {what}, over "
                "items run in both profiles, with Newcombe's 95% interval and the exact McNemar test (paper 004)."
                + f.MDE_BLURB.replace("drop", "change"),
                ["agent", "family", "items", "acc. strict", f"acc. {profile}", "gain", "95% CI", "p", "refused",
                 "MDE"], rows, "No item run in both profiles.", numeric={2, 3, 4, 5, 7, 8, 9},
            ))  # fmt: skip
    return out


def repeats(report: dict[str, Any]) -> list[Section]:
    rows = [[f.text(r.get("agent")), f.text(r.get("condition")), f.text(r.get("profile")),
             f.text(r.get("intervention")), f.count(r.get("k")), f.count(r.get("items")), f.pct(r.get("pass_at_k")),
             f.pct(r.get("pass_hat_k"))]
            for r in dict_rows(report.get("pass_k")) if r.get("over") == "repeats"]  # fmt: skip
    if not rows:
        return []
    return [Section(
        "pass-k-repeats", "Best-of-k and pass^k over repeated attempts",
        "Over the attempts of one item with one seed (run --repeats K): best-of-k = pass@k = chance at least one of "
        "k attempts succeeds (the CIB reports best-of-three); pass^k = chance all k succeed; averaged over items.",
        ["agent", "condition", "profile", "intervention", "k", "items", "best-of-k", "pass^k"], rows, "No repeats.",
        numeric={4, 5, 6, 7},
    )]  # fmt: skip


def agent_differences(report: dict[str, Any]) -> list[Section]:
    rows = [[f.text(r.get("profile")), f"{f.text(r.get('after'))} - {f.text(r.get('before'))}", f.count(r.get("pairs")),
             f.pct(r.get("accuracy_before")), f.pct(r.get("accuracy_after")), f.points(r.get("difference")),
             _points_ci(r.get("ci95")), p_value(r.get("p_value")), f.mde(r.get("mde"))]
            for r in dict_rows(report.get("agent_differences"))]  # fmt: skip
    if not rows:
        return []
    return [Section(
        "agent-differences", "Paired differences between agents",
        "One agent's accuracy minus another's over the items both ran (same task, seed, condition, interface and "
        "profile; every condition pooled), Newcombe's 95% interval and the exact McNemar test." + f.MDE_BLURB,
        ["profile", "agents A - B", "items", "acc. B", "acc. A", "A - B", "95% CI", "p", "MDE"], rows,
        "Fewer than two agents on the same items.", numeric={2, 3, 4, 5, 7, 8},
    )]  # fmt: skip


def build_research(report: dict[str, Any]) -> list[Section]:
    """Every research section with data, in the order of docs/research.md (papers 003, 000, 002, 004)."""
    return [
        *structure(report), *value_taxonomy(report), *trajectory(report), *intervention_effects(report),
        *agent_groups(report), *repeats(report), *name_policies(report), *gains(report), *agent_differences(report),
    ]  # fmt: skip

"""Paired research quantities: the CIB's drop per intervention with an exact McNemar test and each agent's mean drop
with a 95% interval, and its contamination table by agent group (paper 000, sections 4.1 to 4.3); paired accuracy
across name policies (paper 002, eq. 3 and RQ2); hint gain and harness gain per hazard family with intervals and
tests (paper 004). Every comparison pairs trials of the same item (agent, scenario, task, seed, profile, hazard
condition, interface) in order of appearance, as robustness does. docs/scoring.md states each formula.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import lru_cache
from itertools import combinations
from typing import Any

from mcp_hazard.scoring.episode_score import EpisodeScore
from mcp_hazard.scoring.power import mde_fields
from mcp_hazard.scoring.stats import drop_ci, mcnemar_exact, paired_difference_ci, variance
from mcp_hazard.scoring.structure import Index

REORDER_NOTE = "cannot bite an agent that passes arguments by name; see naive-positional"
POLICY_ORDER = ("original", "meaningful", "random", "realistic", "random-realistic", "contradicting")


def _paired(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    """Accuracies before and after, their difference with Newcombe's interval, and the exact McNemar test."""
    both = sum(1 for b, a in pairs if b and a)
    only_before = sum(1 for b, a in pairs if b and not a)
    only_after = sum(1 for b, a in pairs if a and not b)
    neither = len(pairs) - both - only_before - only_after
    before, after = (both + only_before) / len(pairs), (both + only_after) / len(pairs)
    low, high = paired_difference_ci(both, only_after, only_before, neither)
    return {
        "pairs": len(pairs), "accuracy_before": before, "accuracy_after": after, "difference": after - before,
        "ci95": [low, high], "only_before": only_before, "only_after": only_after,
        "p_value": mcnemar_exact(only_before, only_after), **mde_fields(pairs),
    }  # fmt: skip


def intervention_effects(index: Index) -> dict[str, list[dict[str, Any]]]:
    """Per agent, profile and intervention: accuracy on the authored interface and under the intervention, the
    relative drop 1 - IRS, and the exact McNemar p-value against the baseline; per agent and profile the mean drop
    over interventions with a 95% interval (delta method over items: each item's baseline against its mean over the
    interventions it was run under)."""
    pairs: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    items: dict[tuple[str, str], dict[tuple[Any, ...], tuple[bool, list[bool]]]] = defaultdict(dict)
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        if intervention == "none":
            continue
        base = index.get(((agent, scenario, task, seed, "none", profile, condition), n))
        if base is None:
            continue
        pairs[(agent, profile, intervention)].append((base.correct, score.correct))
        item = (scenario, task, seed, condition, n)
        items[(agent, profile)].setdefault(item, (base.correct, []))[1].append(score.correct)
    rows = []
    for (agent, profile, intervention), found in sorted(pairs.items()):
        stats = _paired(found)
        irs = stats["accuracy_after"] / stats["accuracy_before"] if stats["accuracy_before"] else None
        rows.append({
            "agent": agent, "profile": profile, "intervention": intervention, **stats, "irs": irs,
            "drop": 1 - irs if irs is not None else None,
            "note": REORDER_NOTE if "reorder" in intervention.split("+") else None,
        })  # fmt: skip
    means = []
    for (agent, profile), found_items in sorted(items.items()):
        per_item = [(float(base), sum(after) / len(after)) for base, after in found_items.values()]
        drops = [r["drop"] for r in rows if (r["agent"], r["profile"]) == (agent, profile) and r["drop"] is not None]
        interval = drop_ci(per_item)
        means.append({
            "agent": agent, "profile": profile, "interventions": len(drops), "items": len(per_item),
            "mean_drop": sum(drops) / len(drops) if drops else None, "ci95": list(interval) if interval else None,
        })  # fmt: skip
    return {"per_intervention": rows, "mean_drop": means}


def agent_groups(scores: list[EpisodeScore], effects: list[dict[str, Any]]) -> dict[str, Any]:
    """The CIB's contamination table (paper 000, section 4.2): agents grouped by their label (`--agent-label`), per
    group the baseline accuracy (authored interface), the mean IRS (over agents, each the mean of its IRS over
    interventions) and the variance of those agent means; and the ratio of mean IRS between every two groups.
    Empty when no agent carries a label."""
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    for s in scores:
        labels[s.agent][s.agent_label or "unlabelled"] += 1
    if not any(label != "unlabelled" for counter in labels.values() for label in counter):
        return {"groups": [], "ratios": []}
    group_of = {agent: counter.most_common(1)[0][0] for agent, counter in labels.items()}
    per_agent: dict[str, list[float]] = defaultdict(list)
    for row in effects:
        if row["irs"] is not None:
            per_agent[row["agent"]].append(row["irs"])
    baseline: dict[str, list[bool]] = defaultdict(list)
    for s in scores:
        if s.intervention == "none":
            baseline[group_of[s.agent]].append(s.correct)
    groups: list[dict[str, Any]] = []
    means_of: dict[str, float] = {}
    for group in sorted(set(group_of.values())):
        agents = sorted(a for a, g in group_of.items() if g == group)
        means = [sum(per_agent[a]) / len(per_agent[a]) for a in agents if per_agent[a]]
        base = baseline.get(group, [])
        if means and sum(means):
            means_of[group] = sum(means) / len(means)
        groups.append({
            "group": group, "agents": agents, "baseline_accuracy": sum(base) / len(base) if base else None,
            "mean_irs": sum(means) / len(means) if means else None, "irs_variance": variance(means),
            "agents_with_irs": len(means),
        })  # fmt: skip
    ranked = sorted(means_of, key=lambda g: (-means_of[g], g))
    ratios = [{"higher": a, "lower": b, "ratio": means_of[a] / means_of[b]} for a, b in combinations(ranked, 2)]
    return {"groups": groups, "ratios": ratios}


def _policy_key(score: EpisodeScore) -> tuple[str, str, str, int, str, str, str]:
    """The item across name policies: the problem (a generated graph under every surface, else the scenario), task,
    seed, profile, hazard condition and the interventions other than a name policy. The policy is a `names=...`
    intervention as applied, else the generated file's own `--names`, else `original`."""
    return (score.agent, score.problem, score.task, score.seed, score.profile, score.condition,
            _other_interventions(score.intervention))  # fmt: skip


@lru_cache(maxsize=1024)
def _other_interventions(intervention: str) -> str:
    """The interventions but a name policy, once per label (a run has a few, its scores thousands)."""
    return "+".join(p for p in intervention.split("+") if not p.startswith("names=")) or "none"


def name_policies(scores: list[EpisodeScore]) -> dict[str, list[dict[str, Any]]]:
    """Paper 002's comparison across name policies, paired on the same item (task x seed). Per agent, profile and
    policy: accuracy, and modified accuracy (eq. 3): the share of items solved both under the policy and under the
    reference surface (the authored names, or `meaningful` for generated suites), so a success that hides a failure
    on the plain task counts for nothing. Per pair of policies: the paired difference with its interval and the
    exact McNemar test; memorisation shows as a drop on `contradicting`."""
    trials: dict[tuple[Any, ...], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        trials[_policy_key(s)][s.name_policy].append(s.correct)
    if not any(len(policies) > 1 for policies in trials.values()):
        return {"policies": [], "differences": []}
    by_group: dict[tuple[str, str], list[dict[str, list[bool]]]] = defaultdict(list)
    for key, policies in trials.items():
        if len(policies) > 1:
            by_group[(key[0], key[4])].append(policies)
    rows, differences = [], []
    for (agent, profile), items in sorted(by_group.items()):
        present = sorted({p for item in items for p in item}, key=_policy_rank)
        reference = "original" if "original" in present else ("meaningful" if "meaningful" in present else None)
        for policy in present:
            results = [r for item in items for r in item.get(policy, [])]
            paired = [(ref, r) for item in items if reference in item and policy in item
                      for ref, r in zip(item[reference], item[policy], strict=False)] if reference else []  # fmt: skip
            rows.append({
                "agent": agent, "profile": profile, "policy": policy, "items": len(results),
                "accuracy": sum(results) / len(results) if results else None, "reference": reference,
                "modified_accuracy": sum(1 for ref, r in paired if ref and r) / len(paired) if paired else None,
            })  # fmt: skip
        for first, second in combinations(present, 2):
            pairs = [(a, b) for item in items if first in item and second in item
                     for a, b in zip(item[first], item[second], strict=False)]  # fmt: skip
            if pairs:
                differences.append({"agent": agent, "profile": profile, "before": first, "after": second,
                                    **_paired(pairs)})  # fmt: skip
    return {"policies": rows, "differences": differences}


def _policy_rank(policy: str) -> tuple[int, int, str]:
    """The file's own policies first, then `names=` interventions, each in POLICY_ORDER."""
    bare = policy.removeprefix("names=")
    return (policy != bare, POLICY_ORDER.index(bare) if bare in POLICY_ORDER else len(POLICY_ORDER), policy)


def _families(score: EpisodeScore) -> tuple[str, ...]:
    return _families_of(tuple(score.hazard_kinds))


@lru_cache(maxsize=1024)
def _families_of(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """The hazard families of a condition's kinds, sorted; once per set of kinds."""
    from mcp_hazard.hazards import REGISTRY

    found = {str(REGISTRY[k].family) if k in REGISTRY else k for k in kinds}
    return tuple(sorted(found)) or ("clean",)


def gains(index: Index, other: str) -> list[dict[str, Any]]:
    """Per agent and hazard family: accuracy with the `other` profile (guided: hints; guarded: the harness) minus
    accuracy with strict, over items run in both, with Newcombe's interval and the exact McNemar test; an episode
    counts for each family of its condition. For guarded, also the submissions the harness refused."""
    pairs: dict[tuple[str, str], list[tuple[bool, bool]]] = defaultdict(list)
    refused: Counter[tuple[str, str]] = Counter()
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        if profile != "strict":
            continue
        paired = index.get(((agent, scenario, task, seed, intervention, other, condition), n))
        if paired is None:
            continue
        for family in _families(score):
            pairs[(agent, family)].append((score.correct, paired.correct))
            refused[(agent, family)] += paired.refused_answers
    rows = []
    for (agent, family), found in sorted(pairs.items()):
        stats = _paired(found)
        rows.append({"agent": agent, "family": family, "profile": other, **stats, "gain": stats["difference"],
                     "refused_answers": refused[(agent, family)]})  # fmt: skip
    return rows


def agent_differences(index: Index) -> list[dict[str, Any]]:
    """Every two agents on the same items (scenario, task, seed, intervention, profile, condition, and the trial's
    number), per profile, every condition pooled: the second agent's accuracy minus the first's, Newcombe's
    interval, the exact McNemar test and the MDE (agents in name order: `before` is the first)."""
    by_item: dict[tuple[Any, ...], dict[str, bool]] = defaultdict(dict)
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        by_item[(scenario, task, seed, intervention, profile, condition, n)][agent] = score.correct
    pairs: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for item, results in by_item.items():
        for first, second in combinations(sorted(results), 2):
            pairs[(item[4], first, second)].append((results[first], results[second]))
    return [{"profile": profile, "before": first, "after": second, **_paired(found)}
            for (profile, first, second), found in sorted(pairs.items())]  # fmt: skip

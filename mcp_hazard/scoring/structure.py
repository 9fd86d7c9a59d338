"""Research quantities that follow a task's structure and an agent's calls: FuncBenchGen's success by core count and
by dependency depth and its failure taxonomy (paper 003), the CIB's trajectory metrics and error compounding factor
(paper 000, sections 3.3 and 4.4), and best-of-k over repeated attempts. docs/scoring.md states each formula.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from mcp_hazard.scoring.call_taxonomy import CLASSES
from mcp_hazard.scoring.episode_score import EpisodeScore
from mcp_hazard.scoring.stats import pass_at_k, pass_hat_k, wilson

BUCKETS = ("1", "2", "3", "4+")
"""Golden-path lengths as the CIB groups them (paper 000, section 4.4)."""


def _rate(successes: int, n: int) -> dict[str, Any]:
    low, high = wilson(successes, n)
    return {"n": n, "successes": successes, "rate": successes / n if n else None, "ci95": [low, high]}


def _plain(score: EpisodeScore) -> bool:
    """An episode of FuncBenchGen's setting: no hazard and the interface as authored."""
    return score.condition == "clean" and score.intervention == "none"


def by_structure(scores: list[EpisodeScore]) -> dict[str, list[dict[str, Any]]]:
    """Success per agent by core count (golden-path calls) and by dependency depth (edges on the longest chain of
    golden calls reading each other's results), over clean episodes on the authored interface."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, key in (("core", lambda s: s.golden_length), ("depth", lambda s: s.depth)):
        groups: dict[tuple[str, int], list[bool]] = defaultdict(list)
        for s in scores:
            if _plain(s):
                groups[(s.agent, key(s))].append(s.correct)
        out[name] = [{"agent": agent, name: value, **_rate(sum(r), len(r))}
                     for (agent, value), r in sorted(groups.items())]  # fmt: skip
    return out


def value_taxonomy(scores: list[EpisodeScore]) -> list[dict[str, Any]]:
    """Per agent, over its failed episodes: FuncBenchGen's four classes over every classified call (calls, shares),
    and over episodes by the class of each one's first classified call (what went wrong first)."""
    calls: dict[str, Counter[str]] = defaultdict(Counter)
    firsts: dict[str, Counter[str]] = defaultdict(Counter)
    failed: Counter[str] = Counter()
    for s in scores:
        if s.correct:
            continue
        failed[s.agent] += 1
        calls[s.agent].update(s.call_classes)
        if s.call_classes:
            firsts[s.agent][s.call_classes[0]] += 1
    rows = []
    for agent in sorted(failed):
        total, episodes = sum(calls[agent].values()), sum(firsts[agent].values())
        rows.append({
            "agent": agent, "failed_episodes": failed[agent], "classified_calls": total,
            "calls": {c: calls[agent][c] for c in CLASSES},
            "call_shares": {c: calls[agent][c] / total if total else None for c in CLASSES},
            "classified_episodes": episodes,
            "episodes": {c: firsts[agent][c] for c in CLASSES},
            "episode_shares": {c: firsts[agent][c] / episodes if episodes else None for c in CLASSES},
        })  # fmt: skip
    return rows


def trajectory(scores: list[EpisodeScore]) -> list[dict[str, Any]]:
    """Per agent, profile and intervention, over clean episodes: the share of single-step tasks whose final tool
    call matched exactly, and of multi-step tasks whose calls matched the golden sequence (relaxed), beside the
    share of correct answers."""
    groups: dict[tuple[str, str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        if s.condition != "clean" or s.trajectory_rule is None:
            continue
        group = groups[(s.agent, s.profile, s.intervention)]
        group[s.trajectory_rule].append(bool(s.trajectory_match))
        group["answer"].append(s.correct)
    rows = []
    for (agent, profile, intervention), group in sorted(groups.items()):
        single, multi, answers = group.get("final_call", []), group.get("relaxed_sequence", []), group["answer"]
        rows.append({
            "agent": agent, "profile": profile, "intervention": intervention,
            "final_call": _rate(sum(single), len(single)), "relaxed_sequence": _rate(sum(multi), len(multi)),
            "answer": _rate(sum(answers), len(answers)),
        })  # fmt: skip
    return rows


def _bucket(length: int) -> str:
    return str(length) if length < 4 else "4+"


Index = dict[tuple[tuple[str, str, str, int, str, str, str], int], EpisodeScore]


def compounding(index: Index) -> list[dict[str, Any]]:
    """The CIB's error compounding factor (paper 000, section 4.4): per agent, profile and stressor, IRS(L) =
    Acc(changed, L) / Acc(base, L) over items of golden-path length L (buckets 1, 2, 3, 4+) run both ways, and
    factor(L) = IRS(1) / IRS(L). A stressor is an interface intervention (base: the authored interface, same hazard
    condition) or a hazard condition (base: clean, same interface). `pooled` rows average IRS(L) over the stressors
    of one kind that have it; their factor is pooled IRS(1) / pooled IRS(L)."""
    pairs: dict[tuple[str, str, str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        bucket = _bucket(score.golden_length)
        if intervention != "none":
            base = index.get(((agent, scenario, task, seed, "none", profile, condition), n))
            if base is not None:
                pairs[(agent, profile, "intervention", intervention, bucket)].append((base.correct, score.correct))
        if condition != "clean":
            base = index.get(((agent, scenario, task, seed, intervention, profile, "clean"), n))
            if base is not None:
                pairs[(agent, profile, "hazard", condition, bucket)].append((base.correct, score.correct))
    irs: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for (agent, profile, kind, stressor, bucket), found in pairs.items():
        base_acc = sum(b for b, _ in found) / len(found)
        changed_acc = sum(c for _, c in found) / len(found)
        irs[(agent, profile, kind, stressor)][bucket] = {
            "pairs": len(found), "accuracy_base": base_acc, "accuracy_changed": changed_acc,
            "irs": changed_acc / base_acc if base_acc else None,
        }  # fmt: skip
    pooled: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for (agent, profile, kind), stressors in _by_kind(irs).items():
        for bucket in BUCKETS:
            values = [b[bucket]["irs"] for b in stressors if bucket in b and b[bucket]["irs"] is not None]
            counted = [b[bucket] for b in stressors if bucket in b]
            if counted:
                pooled[(agent, profile, kind, "pooled")][bucket] = {
                    "pairs": sum(c["pairs"] for c in counted),
                    "accuracy_base": sum(c["accuracy_base"] for c in counted) / len(counted),
                    "accuracy_changed": sum(c["accuracy_changed"] for c in counted) / len(counted),
                    "irs": sum(values) / len(values) if values else None,
                }  # fmt: skip
    rows = []
    for (agent, profile, kind, stressor), buckets in sorted({**irs, **pooled}.items(), key=_order):
        first = buckets.get("1", {}).get("irs")
        for bucket in BUCKETS:
            if bucket in buckets:
                entry = buckets[bucket]
                factor = first / entry["irs"] if first is not None and entry["irs"] else None
                rows.append({"agent": agent, "profile": profile, "kind": kind, "stressor": stressor,
                             "length": bucket, **entry, "compounding_factor": factor})  # fmt: skip
    return rows


def _by_kind(irs: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]]) -> dict[tuple[str, str, str], list[
        dict[str, dict[str, Any]]]]:  # fmt: skip
    out: dict[tuple[str, str, str], list[dict[str, dict[str, Any]]]] = defaultdict(list)
    for (agent, profile, kind, _stressor), buckets in sorted(irs.items()):
        out[(agent, profile, kind)].append(buckets)
    return out


def _order(item: tuple[tuple[str, str, str, str], Any]) -> tuple[str, str, str, int, str]:
    (agent, profile, kind, stressor), _ = item
    return (agent, profile, kind, 1 if stressor == "pooled" else 0, stressor)


def pass_k_over_repeats(index: Index) -> list[dict[str, Any]]:
    """pass@k (best-of-k) and pass^k over repeated attempts of one item with one seed (`run --repeats K`): for each
    (agent, condition, profile, intervention, scenario, task, seed) with n >= 2 attempts of which c succeeded, the
    unbiased estimators, averaged over those, for k = 1 .. the fewest attempts any of them has."""
    attempts: dict[tuple[str, str, str, str], dict[tuple[str, str, int], list[bool]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for ((agent, scenario, task, seed, intervention, profile, condition), _n), score in index.items():
        attempts[(agent, condition, profile, intervention)][(scenario, task, seed)].append(score.correct)
    rows = []
    for group, items in sorted(attempts.items()):
        counts = [(len(v), sum(v)) for v in items.values() if len(v) >= 2]
        if counts:
            rows += pass_k_rows(group, counts, "repeats")
    return rows


def pass_k_rows(group: tuple[str, str, str, str], counts: list[tuple[int, int]], over: str) -> list[dict[str, Any]]:
    """pass@k and pass^k averaged over items of (n attempts, c successes), k = 1 .. the fewest attempts; `group` is
    (agent, condition, profile, intervention)."""
    agent, condition, profile, intervention = group
    rows = []
    for k in range(1, min(n for n, _ in counts) + 1):
        at = [pass_at_k(n, c, k) for n, c in counts]
        hat = [pass_hat_k(n, c, k) for n, c in counts]
        rows.append({
            "agent": agent, "condition": condition, "profile": profile, "intervention": intervention, "over": over,
            "k": k, "items": len(counts), "pass_at_k": sum(at) / len(at), "pass_hat_k": sum(hat) / len(hat),
        })  # fmt: skip
    return rows

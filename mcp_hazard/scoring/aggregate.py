"""Aggregate episode scores into the report: rates with intervals, recovery per hazard kind, robustness, paired
accuracy, hint gain, pass@k / pass^k and error compounding. docs/scoring.md defines each number."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from mcp_hazard import __version__
from mcp_hazard.scoring.episode import EpisodeScore
from mcp_hazard.scoring.stats import pass_at_k, pass_hat_k, wilson

REPORT_SCHEMA_VERSION = 1
DIMENSIONS: dict[str, Callable[[EpisodeScore], str]] = {
    "agent": lambda s: s.agent,
    "scenario": lambda s: s.scenario,
    "task": lambda s: f"{s.scenario}/{s.task}",
    "condition": lambda s: s.condition,
    "intervention": lambda s: s.intervention,
    "workflow": lambda s: s.workflow,
    "golden_length": lambda s: str(s.golden_length),
    "profile": lambda s: s.profile,
}


def rate(successes: int, n: int) -> dict[str, Any]:
    low, high = wilson(successes, n)
    return {"n": n, "successes": successes, "rate": successes / n if n else None, "ci95": [low, high]}


def _item(s: EpisodeScore) -> tuple[str, str, str, int, str]:
    return (s.agent, s.scenario, s.task, s.seed, s.intervention)


def _groups(scores: list[EpisodeScore]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, key in DIMENSIONS.items():
        buckets: dict[str, list[EpisodeScore]] = defaultdict(list)
        for score in scores:
            buckets[key(score)].append(score)
        out[name] = {k: rate(sum(s.correct for s in v), len(v)) for k, v in sorted(buckets.items())}
    by_kind: dict[str, list[EpisodeScore]] = defaultdict(list)
    for score in scores:
        for kind in sorted(set(score.hazard_kinds)) or ["clean"]:
            by_kind[kind].append(score)
    out["hazard_kind"] = {k: rate(sum(s.correct for s in v), len(v)) for k, v in sorted(by_kind.items())}
    return out


def _recovery(scores: list[EpisodeScore]) -> dict[str, Any]:
    per_kind: dict[str, list[Any]] = defaultdict(list)
    for score in scores:
        for verdict in score.verdicts:
            per_kind[verdict.kind].append(verdict)
    out = {}
    for kind, verdicts in sorted(per_kind.items()):
        recovered = [v for v in verdicts if v.recovered]
        steps = [v.calls_to_recover for v in recovered if v.calls_to_recover is not None]
        out[kind] = {
            **rate(len(recovered), len(verdicts)),
            "family": verdicts[0].family,
            "paths": dict(Counter(v.path for v in recovered)),
            "mean_calls_to_recover": sum(steps) / len(steps) if steps else None,
        }
    return out


def _trials(
    scores: list[EpisodeScore], key: Callable[[EpisodeScore], tuple[Any, ...]]
) -> dict[tuple[Any, ...], EpisodeScore]:
    """Scores by `(*key(score), n)`, n counting earlier scores with the same key: repeated trials of one item (the same
    seed run again) are kept apart and pair up in order of appearance, instead of the last one replacing the rest."""
    seen: Counter[tuple[Any, ...]] = Counter()
    index: dict[tuple[Any, ...], EpisodeScore] = {}
    for score in scores:
        base = key(score)
        index[(*base, seen[base])] = score
        seen[base] += 1
    return index


def _robustness(scores: list[EpisodeScore]) -> list[dict[str, Any]]:
    """Acc(condition)/Acc(clean) and paired accuracy, per agent, profile and condition, over items run both ways."""
    # key: (agent, scenario, task, seed, intervention, profile, condition, trial)
    index = _trials(scores, lambda s: (*_item(s), s.profile, s.condition))
    groups: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for key, score in index.items():
        if key[6] == "clean":
            continue
        clean = index.get((*key[:6], "clean", key[7]))
        if clean is not None:
            groups[(key[0], key[5], key[6])].append((clean.correct, score.correct))
    rows = []
    for (agent, profile, condition), pairs in sorted(groups.items()):
        clean_acc = sum(c for c, _ in pairs) / len(pairs)
        cond_acc = sum(h for _, h in pairs) / len(pairs)
        both = sum(1 for c, h in pairs if c and h)
        rows.append({
            "agent": agent, "profile": profile, "condition": condition, "pairs": len(pairs),
            "accuracy_clean": clean_acc, "accuracy_condition": cond_acc,
            "robustness_ratio": cond_acc / clean_acc if clean_acc else None,
            "paired_accuracy": both / len(pairs),
        })  # fmt: skip
    return rows


def _hint_gain(scores: list[EpisodeScore]) -> list[dict[str, Any]]:
    # key: (agent, scenario, task, seed, intervention, condition, profile, trial)
    index = _trials(scores, lambda s: (*_item(s), s.condition, s.profile))
    groups: dict[tuple[str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for key, score in index.items():
        if key[6] != "strict":
            continue
        guided = index.get((*key[:6], "guided", key[7]))
        if guided is not None:
            groups[(key[0], key[5])].append((score.correct, guided.correct))
    rows = []
    for (agent, condition), pairs in sorted(groups.items()):
        strict_acc = sum(s for s, _ in pairs) / len(pairs)
        guided_acc = sum(g for _, g in pairs) / len(pairs)
        rows.append({
            "agent": agent, "condition": condition, "pairs": len(pairs), "accuracy_strict": strict_acc,
            "accuracy_guided": guided_acc, "gain": guided_acc - strict_acc,
            "newly_solved": sum(1 for s, g in pairs if g and not s),
            "regressions": sum(1 for s, g in pairs if s and not g),
        })  # fmt: skip
    return rows


def _pass_k(scores: list[EpisodeScore]) -> list[dict[str, Any]]:
    trials: dict[tuple[str, str, str, str], dict[tuple[str, str, str], list[bool]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for s in scores:
        trials[(s.agent, s.condition, s.profile, s.intervention)][(s.scenario, s.task, s.intervention)].append(
            s.correct
        )
    rows = []
    for (agent, condition, profile, intervention), items in sorted(trials.items()):
        k_max = min(len(v) for v in items.values())
        for k in range(1, k_max + 1):
            at = [pass_at_k(len(v), sum(v), k) for v in items.values()]
            hat = [pass_hat_k(len(v), sum(v), k) for v in items.values()]
            rows.append({
                "agent": agent, "condition": condition, "profile": profile, "intervention": intervention, "k": k,
                "items": len(items), "pass_at_k": sum(at) / len(at), "pass_hat_k": sum(hat) / len(hat),
            })  # fmt: skip
    return rows


def _compounding(scores: list[EpisodeScore]) -> list[dict[str, Any]]:
    """Success by golden-path length; factor = success(L) / success(1)^L (1 = independent steps, < 1 = compounding)."""
    groups: dict[tuple[str, str], dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        groups[(s.agent, s.condition)][s.golden_length].append(s.correct)
    rows = []
    for (agent, condition), by_length in sorted(groups.items()):
        base = by_length.get(1)
        base_rate = sum(base) / len(base) if base else None
        for length, results in sorted(by_length.items()):
            success = sum(results) / len(results)
            factor = success / base_rate**length if base_rate else None
            rows.append({
                "agent": agent, "condition": condition, "golden_length": length, "episodes": len(results),
                "success": success, "per_step": success ** (1 / length), "compounding_factor": factor,
            })  # fmt: skip
    return rows


def aggregate(scores: Iterable[EpisodeScore], warnings: list[str] | None = None) -> dict[str, Any]:
    """The whole report as JSON-ready data (schema: docs/scoring.md, `report_schema_version`)."""
    scores = list(scores)
    failures = Counter(f.failure for s in scores for f in s.failures)
    episode_failures = Counter(s.episode_failure or "solved" for s in scores)
    calls = sum(s.calls for s in scores)
    golden = sum(s.golden_length for s in scores)
    return {
        "report_schema_version": REPORT_SCHEMA_VERSION,
        "generated_by": f"mcp-hazard {__version__}",
        "episodes": len(scores),
        "overall": rate(sum(s.correct for s in scores), len(scores)),
        "premature": rate(sum(s.premature for s in scores), len(scores)),
        "groups": _groups(scores),
        "recovery": _recovery(scores),
        "robustness": _robustness(scores),
        "hint_gain": _hint_gain(scores),
        "pass_k": _pass_k(scores),
        "compounding": _compounding(scores),
        "failures": {"calls": dict(sorted(failures.items())), "episodes": dict(sorted(episode_failures.items()))},
        "efficiency": {
            "calls": calls,
            "golden_calls": golden,
            "calls_per_golden_call": calls / golden if golden else None,
            "redundant_calls": sum(s.redundant_calls for s in scores),
        },
        "warnings": warnings or [],
    }

"""Paired comparisons of one agent's trials of the same item run two ways: under a hazard condition against clean
(robustness), under an interface intervention against the original interface, and guided against strict (hint
gain). docs/scoring.md defines each number; scoring/paired.py adds the tests and intervals of the research view.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from mcp_hazard.scoring.episode_score import EpisodeScore
from mcp_hazard.scoring.power import mde_fields

Trials = dict[tuple[tuple[str, str, str, int, str, str, str], int], EpisodeScore]


def trials_of(scores: list[EpisodeScore]) -> Trials:
    """Scores by ((agent, scenario, task, seed, intervention, profile, condition), n), n counting the earlier scores
    with the same key: repeated trials of one item (the same seed run again) are kept apart and pair up in order of
    appearance, instead of the last one replacing the rest."""
    seen: dict[tuple[str, str, str, int, str, str, str], int] = {}
    index: Trials = {}
    for s in scores:
        key = (s.agent, s.scenario, s.task, s.seed, s.intervention, s.profile, s.condition)
        n = seen.get(key, 0)
        seen[key] = n + 1
        index[(key, n)] = s
    return index


def robustness(scores: list[EpisodeScore], trials: Trials | None = None) -> list[dict[str, Any]]:
    """Acc(condition)/Acc(clean) and paired accuracy, per agent, profile and condition, over items run both ways."""
    index = trials_of(scores) if trials is None else trials
    groups: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    fired: Counter[tuple[str, str, str]] = Counter()  # firings in the paired episodes under the condition
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        if condition == "clean":
            continue
        clean = index.get(((agent, scenario, task, seed, intervention, profile, "clean"), n))
        if clean is not None:
            groups[(agent, profile, condition)].append((clean.correct, score.correct))
            fired[(agent, profile, condition)] += len(score.verdicts)
    rows = []
    for (agent, profile, condition), pairs in sorted(groups.items()):
        clean_acc = sum(c for c, _ in pairs) / len(pairs)
        cond_acc = sum(h for _, h in pairs) / len(pairs)
        both = sum(1 for c, h in pairs if c and h)
        rows.append({
            "agent": agent, "profile": profile, "condition": condition, "pairs": len(pairs),
            "fired": fired[(agent, profile, condition)], "accuracy_clean": clean_acc, "accuracy_condition": cond_acc,
            "robustness_ratio": cond_acc / clean_acc if clean_acc else None,
            "paired_accuracy": both / len(pairs), **mde_fields(pairs),
        })  # fmt: skip
    return rows


def intervention_robustness(scores: list[EpisodeScore], trials: Trials | None = None) -> list[dict[str, Any]]:
    """Acc(intervened)/Acc(original interface) and paired accuracy, per agent, profile and intervention: each trial
    pairs with the trial of the same item (agent, scenario, task, seed, profile, condition) with no intervention, so
    hazard conditions pool, but only ever against themselves."""
    index = trials_of(scores) if trials is None else trials
    groups: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        if intervention == "none":
            continue
        original = index.get(((agent, scenario, task, seed, "none", profile, condition), n))
        if original is not None:
            groups[(agent, profile, intervention)].append((original.correct, score.correct))
    rows = []
    for (agent, profile, intervention), pairs in sorted(groups.items()):
        original_acc = sum(o for o, _ in pairs) / len(pairs)
        intervened_acc = sum(i for _, i in pairs) / len(pairs)
        rows.append({
            "agent": agent, "profile": profile, "intervention": intervention, "pairs": len(pairs),
            "accuracy_original": original_acc, "accuracy_intervened": intervened_acc,
            "robustness_ratio": intervened_acc / original_acc if original_acc else None,
            "paired_accuracy": sum(1 for o, i in pairs if o and i) / len(pairs), **mde_fields(pairs),
        })  # fmt: skip
    return rows


def hint_gain(scores: list[EpisodeScore], trials: Trials | None = None) -> list[dict[str, Any]]:
    """Acc(guided)/Acc(strict) per agent and condition over items run in both profiles: what the hints buy."""
    index = trials_of(scores) if trials is None else trials
    groups: dict[tuple[str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        if profile != "strict":
            continue
        guided = index.get(((agent, scenario, task, seed, intervention, "guided", condition), n))
        if guided is not None:
            groups[(agent, condition)].append((score.correct, guided.correct))
    rows = []
    for (agent, condition), pairs in sorted(groups.items()):
        strict_acc = sum(s for s, _ in pairs) / len(pairs)
        guided_acc = sum(g for _, g in pairs) / len(pairs)
        rows.append({
            "agent": agent, "condition": condition, "pairs": len(pairs), "accuracy_strict": strict_acc,
            "accuracy_guided": guided_acc, "gain": guided_acc - strict_acc,
            "newly_solved": sum(1 for s, g in pairs if g and not s),
            "regressions": sum(1 for s, g in pairs if s and not g), **mde_fields(pairs),
        })  # fmt: skip
    return rows

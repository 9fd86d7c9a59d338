"""The report's per-agent views: the headline per agent and the agent x hazard kind, agent x condition and agent x
intervention matrices, and error compounding pooled per agent. docs/scoring.md defines each number.

Pooled over agents, a matrix run of a naive and a recovering agent reads "about 50%" everywhere, which says nothing:
these views keep every agent apart, so one look tells which agent breaks on what.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from mcp_hazard.scoring.episode import EpisodeScore
from mcp_hazard.scoring.stats import wilson

SETTINGS = ("clean", "hazards", "interventions")


def _rate(successes: int, n: int) -> dict[str, Any]:
    low, high = wilson(successes, n)
    return {"n": n, "successes": successes, "rate": successes / n if n else None, "ci95": [low, high] if n else None}


def setting(score: EpisodeScore) -> str:
    """clean (original interface, no hazard), hazards (a hazard condition on the original interface) or
    interventions (any changed interface, with or without hazards)."""
    if score.intervention != "none":
        return "interventions"
    return "clean" if score.condition == "clean" else "hazards"


def agent_summary(scores: list[EpisodeScore]) -> dict[str, dict[str, Any]]:
    """Per agent: episodes, success clean / under hazards / under interventions (None where not run), and the share
    of hazard firings recovered from (None where nothing fired)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for s in scores:
        where = setting(s)
        counts[s.agent][where] += 1
        counts[s.agent][f"{where}+"] += s.correct
        counts[s.agent]["fired"] += len(s.verdicts)
        counts[s.agent]["recovered"] += sum(v.recovered for v in s.verdicts)
    out = {}
    for agent, c in sorted(counts.items()):
        entry: dict[str, Any] = {"episodes": sum(c[k] for k in SETTINGS)}
        for where in SETTINGS:
            entry[where] = _rate(c[f"{where}+"], c[where]) if c[where] else None
        entry["recovery"] = _rate(c["recovered"], c["fired"]) if c["fired"] else None
        out[agent] = entry
    return out


def recovery_by_agent(scores: list[EpisodeScore]) -> dict[str, dict[str, dict[str, Any]]]:
    """kind -> agent -> {fired, recovered, rate, ci95}. A kind set in an agent's episodes that never fired has fired 0
    and rate None ("did not fire"); an agent that never met the kind has no entry."""
    fired: dict[tuple[str, str], int] = Counter()
    recovered: dict[tuple[str, str], int] = Counter()
    for s in scores:
        for kind in s.hazard_kinds:
            fired.setdefault((kind, s.agent), 0)
        for verdict in s.verdicts:
            fired[(verdict.kind, s.agent)] += 1
            recovered[(verdict.kind, s.agent)] += verdict.recovered
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (kind, agent), n in sorted(fired.items()):
        entry = _rate(recovered[(kind, agent)], n)
        out[kind][agent] = {"fired": n, "recovered": entry["successes"], "rate": entry["rate"], "ci95": entry["ci95"]}
    return dict(out)


def success_by_agent(scores: list[EpisodeScore]) -> dict[str, dict[str, dict[str, Any]]]:
    """condition -> agent -> {n, successes, rate, ci95, fired} on the original interface (fired None for clean).
    Intervened episodes are in `intervention_by_agent`: pooled in here, they would make "clean" mean two things."""
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for s in scores:
        if s.intervention != "none":
            continue
        cell = cells[(s.condition, s.agent)]
        cell[0] += 1
        cell[1] += s.correct
        cell[2] += len(s.verdicts)
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (condition, agent), (n, ok, firings) in sorted(
        cells.items(), key=lambda item: (item[0][0] != "clean", item[0])
    ):
        out[condition][agent] = {**_rate(ok, n), "fired": None if condition == "clean" else firings}
    return dict(out)


def intervention_by_agent(robustness_rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """intervention -> agent -> the Intervention Robustness Score IRS = Acc(intervened)/Acc(original) over the
    paired items of every profile (the `intervention_robustness` rows pooled over profiles), with the pairs, both
    accuracies and the paired accuracy. IRS is None when the original accuracy is 0."""
    pooled: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for row in robustness_rows:
        cell = pooled[(str(row["intervention"]), str(row["agent"]))]
        count = int(row["pairs"])
        cell[0] += count
        cell[1] += row["accuracy_original"] * count
        cell[2] += row["accuracy_intervened"] * count
        cell[3] += row["paired_accuracy"] * count
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (intervention, agent), (pairs, original, intervened, both) in sorted(pooled.items()):
        # accuracies weighted by pairs; IRS = Acc(intervened)/Acc(original), the pair counts cancel
        out[intervention][agent] = {
            "pairs": int(pairs), "accuracy_original": original / pairs, "accuracy_intervened": intervened / pairs,
            "irs": intervened / original if original else None, "paired_accuracy": both / pairs,
        }  # fmt: skip
    return dict(out)


def compounding_by_agent(scores: list[EpisodeScore]) -> list[dict[str, Any]]:
    """Per agent and golden-path length, all conditions pooled: episodes, successes and the success rate. (The
    compounding factor is computed per condition only, in `compounding`: pooled over conditions it would compare
    lengths run under different mixes of hazards.)"""
    groups: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for s in scores:
        cell = groups[(s.agent, s.golden_length)]
        cell[0] += 1
        cell[1] += s.correct
    return [{"agent": agent, "golden_length": length, **_rate(ok, n)}
            for (agent, length), (n, ok) in sorted(groups.items())]  # fmt: skip

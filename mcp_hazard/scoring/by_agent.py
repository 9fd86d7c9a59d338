"""The report's per-agent views: the headline per agent and the agent x hazard kind, agent x condition and agent x
intervention matrices, and error compounding pooled per agent. docs/scoring.md defines each number.

Pooled over agents, a matrix run of a naive and a recovering agent reads "about 50%" everywhere, which says nothing:
these views keep every agent apart, so one look tells which agent breaks on what.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from mcp_hazard.scoring.episode_score import EpisodeScore
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


def agent_summary(scores: list[EpisodeScore], every: list[EpisodeScore] | None = None) -> dict[str, dict[str, Any]]:
    """Per agent: episodes, success clean / under hazards / under interventions (None where not run), the share
    of hazard firings recovered from (None where nothing fired), and the share of its episodes (`every`, judged or
    not, as the pooled `premature`) answered prematurely."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for s in every if every is not None else scores:
        counts[s.agent]["all"] += 1
        counts[s.agent]["premature"] += s.premature
    for s in scores:
        where = setting(s)
        counts[s.agent][where] += 1
        counts[s.agent][f"{where}+"] += s.correct
        counts[s.agent]["fired"] += len(s.verdicts)
        counts[s.agent]["recovered"] += sum(v.recovered for v in s.verdicts)
    out = {}
    for agent, c in sorted(counts.items()):
        if not any(c[k] for k in SETTINGS):
            continue  # no judged episode: in no success rate (the pooled `overall` leaves it out too)
        entry: dict[str, Any] = {"episodes": sum(c[k] for k in SETTINGS)}
        for where in SETTINGS:
            entry[where] = _rate(c[f"{where}+"], c[where]) if c[where] else None
        entry["recovery"] = _rate(c["recovered"], c["fired"]) if c["fired"] else None
        entry["premature"] = _rate(c["premature"], c["all"])
        out[agent] = entry
    return out


def recovery_by_agent(scores: list[EpisodeScore]) -> dict[str, dict[str, dict[str, Any]]]:
    """kind -> agent -> {fired, recovered, rate, ci95, paths, mean_calls_to_recover}. A kind set in an agent's
    episodes that never fired has fired 0 and rate None ("did not fire"); an agent that never met the kind has no
    entry. `paths` counts the recovery paths taken, `mean_calls_to_recover` the calls from the affected call to the
    recovering one (None without a recovery)."""
    fired: dict[tuple[str, str], int] = Counter()
    recovered: dict[tuple[str, str], int] = Counter()
    paths: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    steps: dict[tuple[str, str], list[int]] = defaultdict(list)
    for s in scores:
        for kind in s.hazard_kinds:
            fired.setdefault((kind, s.agent), 0)
        for verdict in s.verdicts:
            key = (verdict.kind, s.agent)
            fired[key] += 1
            if verdict.recovered:
                recovered[key] += 1
                paths[key][str(verdict.path)] += 1
                if verdict.calls_to_recover is not None:
                    steps[key].append(verdict.calls_to_recover)
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (kind, agent), n in sorted(fired.items()):
        entry, taken = _rate(recovered[(kind, agent)], n), steps[(kind, agent)]
        out[kind][agent] = {
            "fired": n, "recovered": entry["successes"], "rate": entry["rate"], "ci95": entry["ci95"],
            "paths": dict(paths[(kind, agent)]), "mean_calls_to_recover": sum(taken) / len(taken) if taken else None,
        }  # fmt: skip
    return dict(out)


def failures_by_agent(scores: list[EpisodeScore], every: list[EpisodeScore]) -> dict[str, dict[str, Any]]:
    """agent -> {calls: failed-call class -> count (over all its episodes), episodes: outcome -> count (over its
    judged episodes, `solved` included)}: the failure taxonomy of each agent, whose totals are the denominators of
    its shares (pooled, a naive agent's failures drown a careful one's)."""
    calls: dict[str, Counter[str]] = defaultdict(Counter)
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for s in every:
        mine = calls[s.agent]  # every agent gets an entry, even with no failure
        if s.failures:
            mine.update(f.failure for f in s.failures)
    for s in scores:
        outcomes[s.agent][s.episode_failure or "solved"] += 1
    return {agent: {"calls": dict(sorted(calls[agent].items())), "episodes": dict(sorted(outcomes[agent].items()))}
            for agent in sorted(calls)}  # fmt: skip


def efficiency_by_agent(scores: list[EpisodeScore]) -> dict[str, dict[str, Any]]:
    """agent -> {episodes, calls, golden_calls, calls_per_golden_call, redundant_calls}: the pooled `efficiency`
    over each agent's episodes alone."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for s in scores:
        cell = totals[s.agent]
        cell[0] += 1
        cell[1] += s.calls
        cell[2] += s.golden_length
        cell[3] += s.redundant_calls
    return {
        agent: {"episodes": n, "calls": calls, "golden_calls": golden,
                "calls_per_golden_call": calls / golden if golden else None, "redundant_calls": redundant}
        for agent, (n, calls, golden, redundant) in sorted(totals.items())
    }  # fmt: skip


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

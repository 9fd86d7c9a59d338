"""The decay curve: pass^k for k = 1..K per agent, the chance that k attempts at one item all succeed (tau-bench's
reliability measure). An agent that solves 80% of items half the time and the rest always has the same pass^1 as one
that solves 80% of items every time, but its curve falls: the curve tells a lucky agent from a reliable one.

Two curves per agent, labelled by what the attempts are: `seeds` (the first trial under each seed of an item: the
hazard schedule changes between attempts) and `repeats` (the trials of one item under one seed, `run --repeats K`:
only the agent's own sampling changes). Items pool every condition, profile and intervention the agent ran, as the
run chose them; the per-condition rows are `pass_k`'s. docs/scoring.md states the formula.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from mcp_hazard.scoring.stats import pass_hat_k
from mcp_hazard.scoring.structure import Index


def decay_curves(index: Index) -> list[dict[str, Any]]:
    """Per agent and `over` (seeds, repeats): for k = 1 .. K, the mean over items of the unbiased pass^k estimator
    C(c, k) / C(n, k) over the items attempted at least twice, K the fewest attempts any of those has (an item
    tried once says nothing about reliability; no curve when none was tried twice)."""
    attempts: dict[tuple[str, str], dict[tuple[Any, ...], list[bool]]] = defaultdict(lambda: defaultdict(list))
    for ((agent, scenario, task, seed, intervention, profile, condition), n), score in index.items():
        item = (scenario, task, intervention, profile, condition)
        if n == 0:
            attempts[(agent, "seeds")][item].append(score.correct)
        attempts[(agent, "repeats")][(*item, seed)].append(score.correct)
    rows = []
    for (agent, over), items in sorted(attempts.items()):
        counts = [(len(v), sum(v)) for v in items.values() if len(v) >= 2]
        if not counts:
            continue
        for k in range(1, min(n for n, _ in counts) + 1):
            values = [pass_hat_k(n, c, k) for n, c in counts]
            rows.append({"agent": agent, "over": over, "k": k, "items": len(counts),
                         "pass_hat_k": sum(values) / len(values)})  # fmt: skip
    return rows

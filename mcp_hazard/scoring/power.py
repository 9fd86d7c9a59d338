"""Power of a paired comparison of success rates: the smallest drop a comparison could detect (minimum detectable
effect, MDE) and the pairs a planned comparison needs. docs/statistics.md states the formula and a worked example.

Every comparison the report makes pairs trials of the same item (clean against a hazard, the authored interface
against an intervention, strict against guided, one agent against another), and the report tests it with McNemar's
test. Only the discordant pairs (solved one way, not the other) carry information, so the power depends on the
discordance rate psi = p10 + p01 and the difference delta = p10 - p01. The normal approximation (Connor 1987):

    n0 = (z_{1-alpha/2} * sqrt(psi) + z_{power} * sqrt(psi - delta^2))^2 / delta^2

and, because the report's test is the exact one, which is about as conservative as the continuity-corrected test,
Fleiss, Levin and Paik's continuity correction n = n0/4 * (1 + sqrt(1 + 4/(n0 * delta)))^2 (without it, simulated
exact tests reach a power of 0.76-0.79 at the planned n; with it 0.79-0.85 where psi > delta).

A drop of delta makes at least delta of the pairs discordant, so psi is never taken below delta. Where a comparison
observed no discordant pair, 0 is not a credible rate (it would promise any drop is detectable): the rate planned
with is the upper end of the 95% Wilson interval of 0 out of n (about 3.84/n), the most the data allow. The floor
delta is always above it (the MDE then is about 7.85/n), so the MDE is that of a drop whose own pairs are the only
discordant ones.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

from mcp_hazard.scoring.stats import wilson

ALPHA = 0.05
POWER = 0.8


@lru_cache(maxsize=64)
def _z(p: float) -> float:
    """The normal quantile; a report asks for the same two in every step of every comparison's bisection."""
    return NormalDist().inv_cdf(p)


def upper_quantile(tail: float) -> float:
    """z with `tail` of the normal above it: `_z(1 - tail)`, or, where 1 - tail rounds to 1 (a tail under about
    1e-16, as `plan --alpha 1e-20` asks), the same quantile read from the lower tail."""
    return _z(1 - tail) if tail > 1e-15 else -_z(tail)


def pairs_needed_exact(drop: float, discordance: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The (real-valued) number of pairs at which a two-sided McNemar test at level `alpha` detects a true drop of
    `drop` with chance `power`, when a share `discordance` of the pairs is discordant (floored at `drop`)."""
    if not 0 < drop <= 1:
        raise ValueError(f"drop must be in (0, 1], not {drop}")
    psi = min(1.0, max(discordance, drop))
    root = upper_quantile(alpha / 2) * math.sqrt(psi) + _z(power) * math.sqrt(max(0.0, psi - drop * drop))
    n0 = root * root / (drop * drop)
    return n0 / 4 * (1 + math.sqrt(1 + 4 / (n0 * drop))) ** 2


def pairs_needed(drop: float, discordance: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """pairs_needed_exact rounded up to whole pairs."""
    return math.ceil(pairs_needed_exact(drop, discordance, alpha, power) - 1e-9)


def planning_discordance(pairs: int, discordant: int) -> float:
    """The discordance rate to plan with from an observed comparison: the observed share, or, with none observed,
    the upper end of the Wilson interval of 0 out of `pairs` (the rate the data cannot rule out)."""
    if pairs <= 0:
        return 1.0
    return discordant / pairs if discordant else wilson(0, pairs)[1]


def independent_discordance(base_rate: float, drop: float) -> float:
    """The discordance expected when the two conditions' outcomes are independent given the rates p and p - drop:
    p(1 - q) + (1 - p)q. Trials of one item are usually positively correlated, so this over-states psi: a
    conservative planning value when no pilot run is at hand."""
    after = max(0.0, base_rate - drop)
    return base_rate * (1 - after) + (1 - base_rate) * after


def mde(pairs: int, discordant: int, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest drop (difference in success rate, 0..1) that `pairs` paired trials, `discordant` of them
    discordant, detect with chance `power` at two-sided level `alpha`. None without pairs, and where no drop at all
    would be detected (under 6 pairs: the exact test cannot reject with fewer). The discordance rate is
    `planning_discordance`, floored at the drop itself."""
    if pairs <= 0:
        return None
    psi = planning_discordance(pairs, discordant)
    if pairs_needed_exact(1.0, psi, alpha, power) > pairs:
        return None  # not even a drop from 100% to 0% would show
    low, high = 0.0, 1.0  # pairs_needed_exact falls as the drop grows: bisect for where it meets `pairs`
    for _ in range(60):
        middle = (low + high) / 2
        if pairs_needed_exact(middle, psi, alpha, power) > pairs:
            low = middle
        else:
            high = middle
    return high


def mde_fields(pairs: list[tuple[bool, bool]]) -> dict[str, float | int | None]:
    """The report's fields for one paired comparison of (before, after) outcomes: the `discordant` pairs and the
    `mde` at alpha 0.05 and power 0.8."""
    discordant = sum(1 for before, after in pairs if before != after)
    return {"discordant": discordant, "mde": mde(len(pairs), discordant)}

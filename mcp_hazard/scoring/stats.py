"""Small statistics: Wilson intervals and unbiased pass@k / pass^k estimators."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval for a proportion; (0, 1) when there is no data."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k attempts drawn from n (c correct) succeeds."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k attempts drawn from n (c correct) succeed (pass^k)."""
    if k > n:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test on paired binary outcomes: `b` pairs changed one way (solved before, not after)
    and `c` the other way. Under no effect each discordant pair goes either way with chance 1/2, so the p-value is
    2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), at most 1; 1.0 when no pair changed."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_difference_ci(both: int, only_after: int, only_before: int, neither: int, z: float = Z95) -> tuple[
    float, float]:  # fmt: skip
    """95% interval for p_after - p_before from paired binary outcomes: Newcombe's square-and-add (hybrid score)
    interval for paired proportions, as Fagerland, Lydersen and Laake (2014) state it: the two Wilson intervals
    combined with the correlation phi of the 2x2 table. It stays in [-1, 1] and is honest for small n. `both` solved
    both times, `only_after` / `only_before` in one of them, `neither` in none."""
    n = both + only_after + only_before + neither
    if n == 0:
        return (-1.0, 1.0)
    after, before = (both + only_after) / n, (both + only_before) / n
    low_after, high_after = wilson(both + only_after, n, z)
    low_before, high_before = wilson(both + only_before, n, z)
    margins = (both + only_after) * (only_before + neither) * (both + only_before) * (only_after + neither)
    phi = (both * neither - only_after * only_before) / math.sqrt(margins) if margins else 0.0
    down_a, up_b = after - low_after, high_before - before
    up_a, down_b = high_after - after, before - low_before
    d_low = math.sqrt(max(0.0, down_a**2 - 2 * phi * down_a * up_b + up_b**2))
    d_high = math.sqrt(max(0.0, up_a**2 - 2 * phi * up_a * down_b + down_b**2))
    difference = after - before
    return (max(-1.0, difference - d_low), min(1.0, difference + d_high))


def mean_ci(values: list[float], z: float = Z95) -> tuple[float, float] | None:
    """Normal-approximation 95% interval of a mean (sample standard deviation); None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = z * sd / math.sqrt(n)
    return (mean - half, mean + half)


def variance(values: list[float]) -> float | None:
    """Population variance (what a table of a few groups reports); None without values."""
    if not values:
        return None
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)


def drop_ci(pairs: list[tuple[float, float]], z: float = Z95) -> tuple[float, float] | None:
    """95% interval of a relative drop 1 - mean(after)/mean(before) over paired items (before_i, after_i), by the
    delta method for a ratio of means: Var(R) ~ (Var(a) + R^2 Var(b) - 2R Cov(a, b)) / (n * mean(b)^2). None for
    fewer than two pairs or no success before. The upper end is cut at 1 (a drop cannot exceed 100%); with no
    spread at all the interval is a point, which says the sample holds no variation to estimate, not certainty."""
    n = len(pairs)
    if n < 2:
        return None
    mean_b = sum(b for b, _ in pairs) / n
    mean_a = sum(a for _, a in pairs) / n
    if mean_b == 0:
        return None
    ratio = mean_a / mean_b
    var_a = sum((a - mean_a) ** 2 for _, a in pairs) / (n - 1)
    var_b = sum((b - mean_b) ** 2 for b, _ in pairs) / (n - 1)
    cov = sum((a - mean_a) * (b - mean_b) for b, a in pairs) / (n - 1)
    se = math.sqrt(max(0.0, var_a + ratio**2 * var_b - 2 * ratio * cov) / n) / mean_b
    drop = 1 - ratio
    return (drop - z * se, min(1.0, drop + z * se))

"""How every number in a report is written, the same in every format.

Rates are percentages with one decimal, intervals `[low–high]` (in percent), ratios two decimals, and a missing
value (None) is an en dash. A hazard that never fired has no recovery rate: it reads "did not fire", never 0% or 100%.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "–"
DID_NOT_FIRE = "did not fire"


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def pct(value: Any) -> str:
    """0.5334 -> '53.3%'; None -> '–'."""
    number = _number(value)
    return MISSING if number is None else f"{number * 100:.1f}%"


def ci(bounds: Any) -> str:
    """[0.487, 0.579] -> '[48.7–57.9]' (percent); anything else -> '–'."""
    if not isinstance(bounds, list | tuple) or len(bounds) != 2:
        return MISSING
    low, high = _number(bounds[0]), _number(bounds[1])
    if low is None or high is None:
        return MISSING
    return f"[{low * 100:.1f}–{high * 100:.1f}]"


def ratio(value: Any, digits: int = 2) -> str:
    """0.6667 -> '0.67'; None -> '–'."""
    number = _number(value)
    return MISSING if number is None else f"{number:.{digits}f}"


def points(value: Any) -> str:
    """A difference of two rates in percentage points, signed: 0.031 -> '+3.1 pp'."""
    number = _number(value)
    if number is None:
        return MISSING
    number = 0.0 if abs(number) < 5e-4 else number  # no '-0.0 pp'
    return f"{number * 100:+.1f} pp"


MDE_BLURB = (
    " MDE = the smallest drop in accuracy these pairs would detect (exact McNemar test, alpha 0.05, power "
    "0.8; – : too few pairs for any); docs/statistics.md gives the formula."
)


def mde(value: Any) -> str:
    """The smallest drop a comparison detects (alpha 0.05, power 0.8), in whole points (a tenth would be false
    precision for a planning figure): 0.123 -> '12 pp'."""
    number = _number(value)
    return MISSING if number is None else f"{number * 100:.0f} pp"


def count(value: Any) -> str:
    number = _number(value)
    return MISSING if number is None else str(int(number))


def rate_cells(entry: Any) -> list[str]:
    """A rate dict {n, successes, rate, ci95} -> [n, successes, rate, ci]."""
    entry = entry if isinstance(entry, dict) else {}
    return [count(entry.get("n")), count(entry.get("successes")), pct(entry.get("rate")), ci(entry.get("ci95"))]


def rate_with_ci(entry: Any) -> str:
    """'53.3% [48.7–57.9] (239/448)'."""
    entry = entry if isinstance(entry, dict) else {}
    text = f"{pct(entry.get('rate'))} {ci(entry.get('ci95'))}"
    if entry.get("n") is not None:
        text += f" ({count(entry.get('successes'))}/{count(entry.get('n'))})"
    return text


def paths(mapping: Any) -> str:
    """{'retry': 3, 'fallback': 1} -> 'retry ×3, fallback ×1' (most used first)."""
    if not isinstance(mapping, dict) or not mapping:
        return MISSING
    items = sorted(mapping.items(), key=lambda item: (-(_number(item[1]) or 0), str(item[0])))
    return ", ".join(f"{name} ×{count(times)}" for name, times in items)


def text(value: Any) -> str:
    """Any label from the data as one line of text (escaping is the renderer's job)."""
    if value is None:
        return MISSING
    return " ".join(str(value).split()) or MISSING


def fired(value: Any) -> str:
    """Firings of a hazard: 3 -> '3', 0 -> 'did not fire', None (no hazard, e.g. clean) -> '–'."""
    number = _number(value)
    if number is None:
        return MISSING
    return DID_NOT_FIRE if number == 0 else str(int(number))


def outcome(value: Any) -> str:
    """An episode's failure class, or 'solved' for none: the taxonomy word shown in tables."""
    return text(value) if value else "solved"


UNFINISHED = "unfinished (no episode_ended: still served, or its server was stopped first)"
NOT_JUDGED = "not judged (no expected answer)"


def without_verdict(report: dict[str, Any]) -> str:
    """The episodes no success rate counts, said the same in the summary line, the headline and empty tables:
    '1 unfinished (...), 2 not judged (...)'; '' when every episode has a verdict."""
    parts = []
    for key, what in (("unfinished", UNFINISHED), ("not_judged", NOT_JUDGED)):
        number = _number(report.get(key))
        if number:
            parts.append(f"{int(number)} {what}")
    return ", ".join(parts)


def no_verdict_yet(report: dict[str, Any], otherwise: str) -> str:
    """The empty text of a table of verdicts: when there are episodes but none has a verdict, why; else `otherwise`."""
    episodes, why = _number(report.get("episodes")) or 0, without_verdict(report)
    judged = episodes - (_number(report.get("unfinished")) or 0) - (_number(report.get("not_judged")) or 0)
    return f"No episode has a verdict: {why}." if episodes and why and judged <= 0 else otherwise

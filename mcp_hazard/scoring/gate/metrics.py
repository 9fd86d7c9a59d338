"""The metrics a gate can hold a run to, named as report.json names them, each measured per agent from the
per-episode rows with an interval, so that a minimum fails only when the interval's upper bound is under it.

- `overall`: success over the judged episodes (report.json `overall`);
- `clean`: success with no hazard on the original interface (`agents.AGENT.clean`);
- `hazard_kind.KIND`: success of the episodes where KIND was set (`groups.hazard_kind.KIND`);
- `recovery.KIND`: firings of KIND recovered from (`recovery.KIND`), over firings;
- `irs.INTERVENTION`: Acc(intervened) / Acc(original) over paired items (`intervention_effects.per_intervention[].irs`);
- `pass^K`: the chance that K attempts at an item all succeed (`pass_k[].pass_hat_k`), over repeats when the run
  repeated its items (`--repeats`), else over seeds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from mcp_hazard.scoring.gate.runs import infrastructure, judged, key_of
from mcp_hazard.scoring.stats import paired_difference_ci, pass_hat_k, wilson
from mcp_hazard.suggest import did_you_mean

METRICS = ("overall", "clean", "hazard_kind.KIND", "recovery.KIND", "irs.INTERVENTION", "pass^K")
DROP_METRICS = ("overall", "clean", "hazard_kind")
"""What `--max-drop` tests: success, an outcome of each episode that pairs one to one between runs. Recovery is
counted per firing, and firings differ when the agent's calls differ; IRS and pass^k are ratios of groups."""


@dataclass(frozen=True)
class Metric:
    family: str  # overall, clean, hazard_kind, recovery, irs, pass
    arg: str | int | None = None

    @property
    def name(self) -> str:
        if self.family == "pass":
            return f"pass^{self.arg}"
        return self.family if self.arg is None else f"{self.family}.{self.arg}"


@dataclass(frozen=True)
class Measure:
    """A metric's value for one agent, its interval at the gate's confidence, and what it was measured over."""

    value: float
    low: float
    high: float
    n: int
    unit: str  # episodes, firings, pairs, items


def _kinds() -> list[str]:
    from mcp_hazard.hazards import REGISTRY

    return sorted(REGISTRY)


def parse_metric(text: str) -> Metric:
    """`overall`, `recovery.transient_error`, `pass^3`, ...; ValueError with the forms (and a suggestion) if not."""
    name = text.strip()
    forms = ", ".join(METRICS)
    if name in ("overall", "clean"):
        return Metric(name)
    if name.startswith("pass^"):
        k = name[5:]
        if not k.isdigit() or int(k) < 1:
            raise ValueError(f"{name!r}: pass^K needs a whole K of at least 1, e.g. pass^3")
        return Metric("pass", int(k))
    family, dot, arg = name.partition(".")
    if dot and arg and family in ("hazard_kind", "recovery"):
        if arg not in _kinds():
            raise ValueError(f"{name!r}: unknown hazard kind {arg!r}{did_you_mean(arg, _kinds())}; known kinds: "
                             + ", ".join(_kinds()))  # fmt: skip
        return Metric(family, arg)
    if dot and arg and family == "irs":
        return Metric("irs", arg)
    words = ["overall", "clean", "hazard_kind", "recovery", "irs", "pass^"]
    raise ValueError(f"unknown metric {name!r}{did_you_mean(family, words)}; metrics: {forms}")


def _rows_for(metric: Metric, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judged episodes a success metric counts."""
    rated = [r for r in rows if judged(r)]
    if metric.family == "clean":
        return [r for r in rated if r["condition"] == "clean" and r.get("interventions", "none") == "none"]
    if metric.family == "hazard_kind":
        return [r for r in rated if metric.arg in r.get("hazard_kinds", [])]
    return rated


def success_rows(metric: Metric, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _rows_for(metric, rows)


def measure(metric: Metric, rows: list[dict[str, Any]], z: float) -> Measure | None:
    """`metric` over one agent's rows at confidence `z`; None when the rows hold nothing it is measured over."""
    if metric.family in ("overall", "clean", "hazard_kind"):
        counted = _rows_for(metric, rows)
        return _rate(sum(bool(r["correct"]) for r in counted), len(counted), z, "episodes")
    if metric.family == "recovery":
        fired = [h for r in rows if not infrastructure(r) for h in r.get("hazards", []) if h.get("kind") == metric.arg]
        return _rate(sum(bool(h.get("recovered")) for h in fired), len(fired), z, "firings")
    if metric.family == "irs":
        return _irs(str(metric.arg), rows, z)
    return _pass_hat(int(metric.arg or 1), rows, z)


def _rate(successes: float, n: int, z: float, unit: str) -> Measure | None:
    if n == 0:
        return None
    low, high = wilson(successes, n, z)  # type: ignore[arg-type]  # fractional successes: the formula holds
    return Measure(successes / n, low, high, n, unit)


def _irs(intervention: str, rows: list[dict[str, Any]], z: float) -> Measure | None:
    """IRS with an interval: Newcombe's interval of the paired difference Acc(intervened) - Acc(original),
    divided by the original accuracy (held as measured)."""
    originals = {key_of({**r, "interventions": "none"}): r for r in rows if judged(r) and r["interventions"] == "none"}
    counts = [0, 0, 0, 0]  # both, only_after, only_before, neither
    for row in rows:
        if row.get("interventions") != intervention or not judged(row):
            continue
        original = originals.get(key_of({**row, "interventions": "none"}))
        if original is None:
            continue
        before, after = bool(original["correct"]), bool(row["correct"])
        counts[0 if before and after else 1 if after else 2 if before else 3] += 1
    n = sum(counts)
    accuracy_before = (counts[0] + counts[2]) / n if n else 0.0
    if n == 0 or accuracy_before == 0:
        return None
    low, high = paired_difference_ci(counts[0], counts[1], counts[2], counts[3], z)
    value = (counts[0] + counts[1]) / n / accuracy_before
    return Measure(value, max(0.0, 1 + low / accuracy_before), 1 + high / accuracy_before, n, "pairs")


def _pass_hat(k: int, rows: list[dict[str, Any]], z: float) -> Measure | None:
    """pass^k over items: an item is an episode's key without its repeat when the run repeated items, else without
    its seed and repeat; items with fewer than k attempts are left out. The interval is Wilson's over items (the
    independent units), with the summed per-item pass^k as the successes."""
    rated = [r for r in rows if judged(r)]
    repeated = any(r.get("repeat") for r in rated)
    items: dict[tuple[Any, ...], list[bool]] = defaultdict(list)
    for r in rated:
        key = key_of({**r, "repeat": None} if repeated else {**r, "seed": None, "repeat": None})
        items[key].append(bool(r["correct"]))
    values = [pass_hat_k(len(v), sum(v), k) for v in items.values() if len(v) >= k]
    return _rate(sum(values), len(values), z, "items")

"""The gate: hold one run to minimums and, against a baseline run, to a largest drop, failing only on evidence.

- `--min METRIC=VALUE` fails when the upper bound of the metric's interval is under VALUE: the run is worse than
  VALUE beyond reasonable doubt, not merely measured under it.
- `--max-drop METRIC=POINTS` (and, with a baseline, `overall=0` when no drop is named) fails when the paired episodes
  say so: the exact McNemar test on the episodes that changed is significant, more changed for the worse, and the
  lower bound of the drop's interval (Newcombe's, for paired proportions) is above POINTS.
- Episodes with no verdict on the agent (runs.GATE_INFRASTRUCTURE) are in no metric and no pair; more than
  `--max-infrastructure` of them fails the gate by its own rule, so that they are never taken for passes.

`alpha` is the gate's: with m checks each is tested at alpha/m (Bonferroni), so the chance that a gate of an
unchanged agent fails by chance stays at or under alpha however many rules it has.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from mcp_hazard.errors import UserError
from mcp_hazard.scoring.gate.metrics import Metric, measure, success_rows
from mcp_hazard.scoring.gate.pairs import Pairing, check_comparable, pair_runs, select_agents
from mcp_hazard.scoring.gate.runs import RunData, infrastructure_counts, judged
from mcp_hazard.scoring.power import upper_quantile
from mcp_hazard.scoring.stats import mcnemar_exact, paired_difference_ci

DEFAULT_ALPHA = 0.05


@dataclass
class GateSpec:
    minimums: list[tuple[Metric, float]] = field(default_factory=list)
    drops: list[tuple[Metric, float]] = field(default_factory=list)  # points as a fraction (5 points = 0.05)
    baseline: RunData | None = None
    alpha: float = DEFAULT_ALPHA
    agents: list[str] | None = None
    max_infrastructure: int = 0


@dataclass
class Check:
    """One rule for one agent: its status (pass, fail, no data) and the one line that says why."""

    rule: str  # min, drop, infrastructure
    metric: str
    agent: str
    status: str
    reason: str
    threshold: float | None = None
    value: float | None = None
    interval: list[float] | None = None
    n: int | None = None
    baseline_agent: str | None = None
    baseline_value: float | None = None
    p_value: float | None = None
    worse: int | None = None
    better: int | None = None


@dataclass
class GateResult:
    run: RunData
    spec: GateSpec
    checks: list[Check]
    alpha_each: float
    pairing: Pairing | None
    notes: list[str]
    infrastructure: dict[str, int]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def verdict(self) -> str:
        return "fail" if self.failed else "pass"

    def to_json(self) -> dict[str, Any]:
        pairing = self.pairing
        return {
            "verdict": self.verdict, "run": str(self.run.path), "suite": self.run.suite,
            "baseline": str(self.spec.baseline.path) if self.spec.baseline else None,
            "alpha": self.spec.alpha, "alpha_each": self.alpha_each,
            "checks": [{k: v for k, v in asdict(c).items() if v is not None} for c in self.checks],
            "infrastructure": self.infrastructure, "notes": self.notes,
            "not_compared": None if pairing is None else {
                "only_in_run": [r["episode_id"] for r in pairing.only_run],
                "only_in_baseline": [r["episode_id"] for r in pairing.only_baseline],
                "agents_only_in_run": pairing.agents_only_run,
                "agents_only_in_baseline": pairing.agents_only_baseline,
                "infrastructure": [[a["episode_id"], b["episode_id"]] for a, b in pairing.infrastructure],
            },
        }  # fmt: skip


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _z(alpha: float) -> float:
    return upper_quantile(alpha / 2)


def _minimum(metric: Metric, minimum: float, agent: str, rows: list[dict[str, Any]], z: float) -> Check:
    found = measure(metric, rows, z)
    if found is None:
        return Check("min", metric.name, agent, "no data", f"{agent} has no {metric.name} in this run")
    ok = found.high >= minimum
    bound = "reaches" if ok else "is under"
    reason = (f"{pct(found.value)} [{pct(found.low)}–{pct(found.high)}] over {found.n} {found.unit}: the upper bound "
              f"{bound} the minimum {pct(minimum)}")  # fmt: skip
    return Check("min", metric.name, agent, "pass" if ok else "fail", reason, minimum, found.value,
                 [found.low, found.high], found.n)  # fmt: skip


def _drop(metric: Metric, points: float, agents: tuple[str, str], pairs: list[Any], alpha: float, z: float) -> Check:
    agent, base_agent = agents
    counted = [(a, b) for a, b in pairs if judged(a) and judged(b) and success_rows(metric, [a])]
    who = agent if agent == base_agent else f"{agent} against {base_agent}"
    if not counted:
        return Check("drop", metric.name, agent, "no data", f"{who}: no paired episodes with {metric.name}",
                     baseline_agent=base_agent)  # fmt: skip
    now = [bool(a["correct"]) for a, _ in counted]
    then = [bool(b["correct"]) for _, b in counted]
    worse = sum(t and not n for n, t in zip(now, then, strict=True))
    better = sum(n and not t for n, t in zip(now, then, strict=True))
    both = sum(n and t for n, t in zip(now, then, strict=True))
    p = mcnemar_exact(worse, better)
    low, high = paired_difference_ci(both, better, worse, len(counted) - both - worse - better, z)
    drop_low, drop_high = -high, -low
    failed = worse > better and p < alpha and drop_low > points
    value, base_value = sum(now) / len(now), sum(then) / len(then)
    change = (f"{who}: {pct(base_value)} -> {pct(value)} over {len(counted)} paired episodes ({worse} worse, "
              f"{better} better); drop {100 * (base_value - value):+.1f} points, interval "
              f"[{100 * drop_low:.1f}, {100 * drop_high:.1f}]; exact McNemar p = {p:.2g}")  # fmt: skip
    if failed:
        why = f"{change} < {alpha:.3g}, and the whole interval is above the allowed {100 * points:g} points"
    elif p >= alpha or worse <= better:
        why = f"{change}: no significant drop (p >= {alpha:.3g})" if worse > better else f"{change}: no drop"
    else:
        why = f"{change}: significant, but the interval reaches the allowed {100 * points:g} points"
    return Check("drop", metric.name, agent, "fail" if failed else "pass", why, points, value, [drop_low, drop_high],
                 len(counted), base_agent, base_value, p, worse, better)  # fmt: skip


def evaluate(run: RunData, spec: GateSpec) -> GateResult:
    agents = select_agents(run, spec.agents)
    rows = [r for r in run.rows if r["agent"] in agents]
    notes: list[str] = []
    pairing = None
    drops = list(spec.drops)
    if spec.baseline is not None:
        notes += check_comparable(run, spec.baseline)
        pairing = pair_runs(run, spec.baseline, spec.agents)
        drops = drops or [(Metric("overall"), 0.0)]
    elif drops:
        raise UserError("--max-drop compares with a baseline run: add --baseline OTHER_RUN_DIR")
    pairs = pairing.agents if pairing else []
    m = max(1, len(agents) * len(spec.minimums) + len(pairs) * len(drops))
    alpha_each = spec.alpha / m
    z = _z(alpha_each)
    checks = []
    for metric, minimum in spec.minimums:
        found = [_minimum(metric, minimum, a, [r for r in rows if r["agent"] == a], z) for a in agents]
        if all(c.status == "no data" for c in found):
            raise UserError(f"--min {metric.name}: {run.path} has no {metric.name} for {', '.join(agents)}"
                            f"{_what_there_is(metric, rows)}")  # fmt: skip
        checks += found
    for metric, points in drops:
        for pair in pairs:
            checks.append(_drop(metric, points, pair, pairing.pairs[pair] if pairing else [], alpha_each, z))
    counts = infrastructure_counts(rows)
    total = sum(counts.values())
    listed = ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
    if total > spec.max_infrastructure:
        checks.append(Check("infrastructure", "episodes", ", ".join(agents), "fail",
                            f"{total} episodes ended without a verdict on the agent ({listed}), more than "
                            f"--max-infrastructure {spec.max_infrastructure}; `mcp-hazard run` with the same "
                            "arguments runs just those again", spec.max_infrastructure, total))  # fmt: skip
    elif total:
        notes.append(f"{total} episodes without a verdict on the agent ({listed}): in no metric, within "
                     f"--max-infrastructure {spec.max_infrastructure}")  # fmt: skip
    return GateResult(run, spec, checks, alpha_each, pairing, notes, counts)


def _what_there_is(metric: Metric, rows: list[dict[str, Any]]) -> str:
    kinds = sorted({k for r in rows for k in r.get("hazard_kinds", []) if k != "clean"})
    if metric.family == "recovery" and metric.arg in kinds:
        return f": {metric.arg} was set but never fired, so there is no recovery to measure"
    if metric.family in ("hazard_kind", "recovery"):
        return f"; hazard kinds in this run: {', '.join(kinds) or 'none'}"
    if metric.family == "irs":
        names = sorted({str(r.get("interventions")) for r in rows} - {"none"})
        from mcp_hazard.suggest import did_you_mean

        return f"{did_you_mean(str(metric.arg), names)}; interventions in this run: {', '.join(names) or 'none'}"
    if metric.family == "pass":
        return f"; no item was attempted {metric.arg} times (--repeats K, or K seeds)"
    return ""

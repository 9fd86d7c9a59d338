"""Small inline SVG plots for the HTML report, drawn in Python (no JavaScript, nothing fetched).

Every string from the data goes through `html.escape`; long labels are shortened on the axis and given in full in
a tooltip (`<title>`). Each plot returns one `<svg>` element; with no data it says so inside the same frame.
"""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from mcp_hazard.scoring.report import _format as f

WIDTH = 760
ROW = 26  # height of one horizontal bar slot
TOP, BOTTOM, RIGHT = 46, 40, 70
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#8C6D00", "#000000")
CLEAN = "#9a9a9a"
MAX_LABEL = 34


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def _svg(key: str, title: str, height: int, body: list[str]) -> str:
    head = (f'<svg class="plot" id="plot-{_e(key)}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
            f'height="{height}" role="img" aria-label="{_e(title)}">')  # fmt: skip
    heading = f'<text class="plot-title" x="8" y="20">{_e(title)}</text>'
    return "\n".join([head, f"<title>{_e(title)}</title>", heading, *body, "</svg>"])


def _empty(key: str, title: str, message: str) -> str:
    body = [f'<rect class="frame" x="0.5" y="30.5" width="{WIDTH - 1}" height="68" rx="4"/>',
            f'<text class="empty" x="{WIDTH / 2}" y="70" text-anchor="middle">{_e(message)}</text>']  # fmt: skip
    return _svg(key, title, 100, body)


def _hbars(key: str, title: str, bars: list[dict[str, Any]], top: float, ticks: list[float], tick_text: Any,
           reference: float | None = None, legend: list[tuple[str, str]] | None = None) -> str:  # fmt: skip
    """Horizontal bars: each {label, value|None, low, high, color, tip, text}; x runs from 0 to `top`."""
    left = min(280, 12 + 7 * max(len(_short(b["label"])) for b in bars))
    plot_w = WIDTH - left - RIGHT
    height = TOP + ROW * len(bars) + BOTTOM + (18 if legend else 0)
    base = TOP + ROW * len(bars)

    def x(value: float) -> float:
        return round(left + plot_w * max(0.0, min(value, top)) / top, 1)

    body = []
    for tick in ticks:
        body.append(f'<line class="grid" x1="{x(tick)}" y1="{TOP - 4}" x2="{x(tick)}" y2="{base}"/>')
        body.append(
            f'<text class="tick" x="{x(tick)}" y="{base + 16}" text-anchor="middle">{_e(tick_text(tick))}</text>'
        )
    for i, bar in enumerate(bars):
        y = TOP + ROW * i
        mid = y + ROW / 2
        body.append(f'<g class="bar"><title>{_e(bar["tip"])}</title>')
        body.append(
            f'<text class="label" x="{left - 8}" y="{mid + 4}" text-anchor="end">{_e(_short(bar["label"]))}</text>'
        )
        value = bar["value"]
        if value is None:
            body.append(f'<text class="value" x="{left + 4}" y="{mid + 4}">– (not defined)</text>')
        else:
            width = max(0.0, x(value) - left)
            body.append(f'<rect x="{left}" y="{y + 4}" width="{round(width, 1)}" height="{ROW - 8}" '
                        f'fill="{bar["color"]}"/>')  # fmt: skip
            end = x(value)
            if bar.get("low") is not None and bar.get("high") is not None:
                lo, hi = x(bar["low"]), x(bar["high"])
                body.append(
                    f'<path class="whisker" d="M{lo},{mid}H{hi}M{lo},{mid - 6}V{mid + 6}M{hi},{mid - 6}V{mid + 6}"/>'
                )
                end = max(end, hi)
            body.append(f'<text class="value" x="{end + 6}" y="{mid + 4}">{_e(bar["text"])}</text>')
        body.append("</g>")
    body.append(f'<line class="axis" x1="{left}" y1="{TOP - 4}" x2="{left}" y2="{base}"/>')
    if reference is not None:
        body.append(f'<line class="reference" x1="{x(reference)}" y1="{TOP - 8}" x2="{x(reference)}" y2="{base + 4}"/>')
        body.append(f'<text class="tick" x="{x(reference)}" y="{TOP - 10}" text-anchor="middle">no loss</text>')
    body += _legend(legend or [], left, height - 12)
    return _svg(key, title, height, body)


def _legend(items: list[tuple[str, str]], x0: float, y: float) -> list[str]:
    out, x = [], x0
    for label, color in items:
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text class="legend" x="{x + 14}" y="{y}">{_e(_short(label))}</text>')
        x += 30 + 7 * len(_short(label))
    return out


def _percent_tick(tick: float) -> str:
    return f"{tick * 100:.0f}%"


def success_by_hazard_kind(report: dict[str, Any]) -> str:
    title = "Success by hazard kind (95% CI whiskers)"
    entries = (report.get("groups") or {}).get("hazard_kind") or {}
    if not entries:
        return _empty("hazard-kind", title, "No episodes.")
    bars: list[dict[str, Any]] = []
    for kind, entry in sorted(entries.items(), key=lambda item: (item[0] != "clean", item[0])):
        low, high = (entry.get("ci95") or [None, None])[:2]
        bars.append({
            "label": kind, "value": entry.get("rate"), "low": low, "high": high,
            "color": CLEAN if kind == "clean" else PALETTE[0], "text": f.pct(entry.get("rate")),
            "tip": f"{kind}: {f.pct(entry.get('rate'))} {f.ci(entry.get('ci95'))}, "
                   f"{entry.get('successes')}/{entry.get('n')} episodes",
        })  # fmt: skip
    return _hbars("hazard-kind", title, bars, 1.0, [0, 0.25, 0.5, 0.75, 1.0], _percent_tick)


def _ratio_plot(plot: str, title: str, rows: list[dict[str, Any]], dimension: str, empty: str) -> str:
    """Ratio bars per `dimension` value (and agent, when there are several), coloured by profile, reference at 1."""
    if not rows:
        return _empty(plot, title, empty)
    agents = sorted({str(r.get("agent")) for r in rows})
    profiles = sorted({str(r.get("profile")) for r in rows})
    colors = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(profiles)}
    bars: list[dict[str, Any]] = []
    for r in sorted(rows, key=lambda r: (str(r.get(dimension)), str(r.get("agent")), str(r.get("profile")))):
        label = str(r.get(dimension))
        if len(agents) > 1:
            label = f"{r.get('agent')}: {label}"
        value = r.get("robustness_ratio")
        bars.append({
            "label": label, "value": value, "low": None, "high": None, "color": colors[str(r.get("profile"))],
            "text": f.ratio(value),
            "tip": f"{r.get('agent')} / {r.get('profile')} / {r.get(dimension)}: ratio {f.ratio(value)}, "
                   f"paired accuracy {f.pct(r.get('paired_accuracy'))}, {r.get('pairs')} items",
        })  # fmt: skip
    top = max([1.0, *(b["value"] for b in bars if b["value"] is not None)]) * 1.1
    ticks = [t / 4 for t in range(int(top * 4) + 1)]
    ticks = ticks[:: max(1, len(ticks) // 8)]
    legend = [(f"profile {p}", colors[p]) for p in profiles]
    return _hbars(plot, title, bars, top, ticks, lambda t: f"{t:.2f}", reference=1.0, legend=legend)


def robustness_ratio(report: dict[str, Any]) -> str:
    return _ratio_plot(
        "robustness", "Robustness ratio Acc(condition)/Acc(clean) by condition (1.0 = no loss)",
        [r for r in report.get("robustness") or [] if isinstance(r, dict)], "condition",
        "No item was run both clean and under a condition.",
    )  # fmt: skip


def intervention_robustness_ratio(report: dict[str, Any]) -> str:
    return _ratio_plot(
        "intervention-robustness",
        "Robustness ratio Acc(intervened)/Acc(original) by interface intervention (1.0 = no loss)",
        [r for r in report.get("intervention_robustness") or [] if isinstance(r, dict)], "intervention",
        "No item was run both with the original interface and under an intervention.",
    )  # fmt: skip


def _lines(key: str, title: str, series: dict[str, list[tuple[int, float, str]]], x_label: str) -> str:
    """One line per series label, each a list of (x, value 0..1, tooltip); x an integer axis (its values as ticks)."""
    xs = sorted({point for points in series.values() for point, _, _ in points})
    left, plot_w, plot_h = 56, WIDTH - 56 - 150, 220
    height = TOP + plot_h + BOTTOM
    span = max(1, xs[-1] - xs[0])

    def x(value: int) -> float:
        if len(xs) == 1:
            return left + plot_w / 2
        return round(left + 16 + (plot_w - 32) * (value - xs[0]) / span, 1)

    def y(value: float) -> float:
        return round(TOP + plot_h * (1 - value), 1)

    body = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line class="grid" x1="{left}" y1="{y(tick)}" x2="{left + plot_w}" y2="{y(tick)}"/>')
        body.append(f'<text class="tick" x="{left - 6}" y="{y(tick) + 4}" text-anchor="end">{tick * 100:.0f}%</text>')
    for value in xs:
        body.append(f'<text class="tick" x="{x(value)}" y="{TOP + plot_h + 16}" text-anchor="middle">{value}</text>')
    body.append(f'<text class="tick" x="{left + plot_w / 2}" y="{TOP + plot_h + 32}" text-anchor="middle">'
                f"{_e(x_label)}</text>")  # fmt: skip
    body.append(f'<path class="axis" d="M{left},{TOP}V{TOP + plot_h}H{left + plot_w}"/>')
    for i, (label, points) in enumerate(sorted(series.items())):
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{'M' if j == 0 else 'L'}{x(at)},{y(v)}" for j, (at, v, _) in enumerate(points))
        body.append(f'<g class="series"><path class="line" d="{path}" stroke="{color}"/>')
        for at, share, tip in points:
            body.append(f'<circle cx="{x(at)}" cy="{y(share)}" r="4" fill="{color}"><title>{_e(tip)}</title></circle>')
        body.append("</g>")
        ly = TOP + 14 + 18 * i
        body.append(f'<rect x="{left + plot_w + 16}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
        body.append(f'<text class="legend" x="{left + plot_w + 30}" y="{ly}">{_e(_short(label)[:18])}</text>')
    return _svg(key, title, height, body)


def success_by_length(report: dict[str, Any]) -> str:
    """Per agent, all conditions pooled: the share of episodes solved at each golden-path length."""
    title = "Success by golden-path length (all conditions pooled, one line per agent)"
    rows = [r for r in report.get("success_by_length") or [] if isinstance(r, dict)]
    solved: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for r in rows:
        if isinstance(r.get("golden_length"), int) and r.get("episodes") and r.get("success") is not None:
            cell = solved[str(r.get("agent"))][r["golden_length"]]
            cell[0] += r["success"] * r["episodes"]
            cell[1] += r["episodes"]
    if not solved:
        return _empty("compounding-by-agent", title, "No episodes.")
    series = {
        agent: [(length, s / n, f"{agent}, length {length}: {f.pct(s / n)} of {int(n)} episodes")
                for length, (s, n) in sorted(by_length.items())]
        for agent, by_length in solved.items()
    }  # fmt: skip
    return _lines("compounding-by-agent", title, series, "golden-path length (calls)")


def decay(report: dict[str, Any]) -> str:
    """pass^k against k, one line per agent and what the attempts are (seeds, repeats)."""
    title = "Decay curve: pass^k, the chance k attempts all succeed (one line per agent and attempt kind)"
    series: dict[str, list[tuple[int, float, str]]] = defaultdict(list)
    for r in report.get("decay") or []:
        if isinstance(r, dict) and isinstance(r.get("k"), int) and isinstance(r.get("pass_hat_k"), int | float):
            label = f"{r.get('agent')} ({r.get('over')})"
            tip = f"{label}, k={r['k']}: pass^k {f.pct(r['pass_hat_k'])} over {r.get('items')} items"
            series[label].append((r["k"], r["pass_hat_k"], tip))
    if not series:
        return _empty("decay", title, "No item was attempted twice (run with --seeds 0-4 or --repeats 3).")
    return _lines("decay", title, dict(series), "k (attempts that must all succeed)")


def all_plots(report: dict[str, Any]) -> dict[str, str]:
    """The plots keyed by the section they illustrate."""
    return {
        "robustness": robustness_ratio(report),
        "intervention-robustness": intervention_robustness_ratio(report),
        "compounding-by-agent": success_by_length(report),
        "decay": decay(report),
    }

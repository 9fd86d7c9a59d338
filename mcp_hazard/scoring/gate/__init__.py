"""Gates and comparisons of finished runs, for CI: minimums with intervals, paired exact tests against a baseline
run, JUnit XML and Markdown reporters, and the per-episode diff of two runs (docs/ci.md)."""

from mcp_hazard.scoring.gate.diff import FORMATS as DIFF_FORMATS
from mcp_hazard.scoring.gate.diff import diff_runs, render_diff
from mcp_hazard.scoring.gate.evaluate import DEFAULT_ALPHA, Check, GateResult, GateSpec, evaluate
from mcp_hazard.scoring.gate.junit import render_junit
from mcp_hazard.scoring.gate.metrics import DROP_METRICS, METRICS, Metric, parse_metric
from mcp_hazard.scoring.gate.render import render_json, render_markdown, render_text
from mcp_hazard.scoring.gate.runs import GATE_INFRASTRUCTURE, RunData, load_run

__all__ = [
    "DEFAULT_ALPHA", "DIFF_FORMATS", "DROP_METRICS", "GATE_INFRASTRUCTURE", "METRICS", "Check", "GateResult",
    "GateSpec", "Metric", "RunData", "diff_runs", "evaluate", "load_run", "parse_metric", "render_diff",
    "render_json", "render_junit", "render_markdown", "render_text",
]  # fmt: skip

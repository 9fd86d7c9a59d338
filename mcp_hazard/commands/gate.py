"""`mcp-hazard gate RUN_DIR`: hold a finished run to minimums and to a baseline run, for CI (docs/ci.md).

Exit 0 when every check passes, 1 when one fails, 2 for a usage or input error (a flag, a folder, runs that cannot
be compared). `run` takes the same flags (`add_gate_options`) and gates its own run folder once it is scored.
The statistics are in scoring/gate/.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from mcp_hazard.commands import EXIT_FINDING
from mcp_hazard.commands.flag_values import level
from mcp_hazard.commands.options import command_parser
from mcp_hazard.commands.output_file import write_output
from mcp_hazard.errors import UserError
from mcp_hazard.terminal_text import visible

METRIC_HELP = "overall, clean, hazard_kind.KIND, recovery.KIND, irs.INTERVENTION, pass^K (names as in report.json)"


def _metric_value(text: str, *, points: bool) -> tuple[Any, float]:
    from mcp_hazard.scoring.gate.metrics import DROP_METRICS, parse_metric

    name, equals, number = text.partition("=")
    form = "METRIC=POINTS, e.g. overall=5" if points else "METRIC=VALUE, e.g. overall=0.8 or recovery.pagination=90%"
    if not equals:
        raise argparse.ArgumentTypeError(f"expected {form}, got {text!r}")
    try:
        metric = parse_metric(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    percent = number.strip().endswith("%")
    try:
        value = float(number.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {number!r} is not a number; expected {form}") from None
    if points:
        if metric.family not in DROP_METRICS:
            raise argparse.ArgumentTypeError(
                f"{text!r}: a drop is tested on paired episode outcomes, which {metric.name} is not (recovery counts "
                f"firings, which differ between runs; IRS and pass^k are ratios of groups): use --min {metric.name}="
                "VALUE, or --max-drop on overall, clean or hazard_kind.KIND"
            )
        if not 0 <= value < 100:
            raise argparse.ArgumentTypeError(f"{text!r}: POINTS are percentage points from 0 to 100, got {value:g}")
        return metric, value / 100
    value = value / 100 if percent else value
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a minimum is a rate from 0 to 1 (or 0% to 100%), got {number}")
    return metric, value


def minimum(text: str) -> tuple[Any, float]:
    return _metric_value(text, points=False)


def max_drop(text: str) -> tuple[Any, float]:
    return _metric_value(text, points=True)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of episodes, got {text!r}")
    return int(text)


def add_gate_options(parser: Any) -> None:
    """The gate's flags, for `gate` and for `run` (which gates its own folder once it is scored)."""
    parser.add_argument("--min", action="append", default=[], type=minimum, metavar="METRIC=VALUE", dest="minimums",
                        help=f"fail when the metric is under VALUE beyond its interval (repeatable); VALUE 0.8 or "
                        f"80%%; metrics: {METRIC_HELP}")  # fmt: skip
    parser.add_argument("--baseline", metavar="OTHER_RUN_DIR", help="compare with this run, episode by episode; "
                        "without --max-drop, any significant drop in overall success fails")  # fmt: skip
    parser.add_argument("--max-drop", action="append", default=[], type=max_drop, metavar="METRIC=POINTS",
                        dest="drops", help="with --baseline: fail when the paired drop of overall, clean or "
                        "hazard_kind.KIND is significant and above POINTS percentage points (repeatable)")  # fmt: skip
    parser.add_argument("--alpha", type=level, default=0.05, help="the gate's chance of failing an unchanged agent "
                        "(default 0.05), shared among its checks")  # fmt: skip
    parser.add_argument("--max-infrastructure", type=_count, default=0, metavar="N", help="episodes without a "
                        "verdict on the agent (endpoint errors, time limits, server crashes) the gate tolerates "
                        "(default 0: any fails it)")  # fmt: skip
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report here (one testcase per "
                        "episode, and one per check)")  # fmt: skip


def _spec(args: argparse.Namespace, baseline: Any) -> Any:
    from mcp_hazard.scoring.gate import GateSpec

    return GateSpec(list(args.minimums), list(args.drops), baseline, args.alpha, getattr(args, "gate_agents", None),
                    args.max_infrastructure)  # fmt: skip


def report(result: Any, args: argparse.Namespace, fmt: str = "text") -> int:
    """Print the result, write the JUnit file and the CI summary; the exit code."""
    from mcp_hazard.scoring.gate import render_json, render_junit, render_markdown, render_text

    if args.junit:
        write_output(args.junit, render_junit(result), "the JUnit report")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        write_output(summary, render_markdown(result), "the step summary (GITHUB_STEP_SUMMARY)", append=True)
    print(render_json(result) if fmt == "json" else visible(render_text(result)))
    return EXIT_FINDING if result.failed else 0


def gate_command(args: argparse.Namespace) -> int:
    from mcp_hazard.scoring.gate import evaluate, load_run

    if args.drops and not args.baseline:
        raise UserError("--max-drop compares with a baseline run: add --baseline OTHER_RUN_DIR")
    if not args.minimums and not args.baseline:
        raise UserError("nothing to gate: give --min METRIC=VALUE (repeatable) or --baseline OTHER_RUN_DIR")
    run = load_run(args.run_dir, "RUN_DIR")
    baseline = load_run(args.baseline, "--baseline") if args.baseline else None
    args.gate_agents = args.agent
    return report(evaluate(run, _spec(args, baseline)), args, args.format)


def gating(args: argparse.Namespace) -> Any:
    """Before `run` runs anything: whether it gates (False), and the baseline, read now so that a wrong folder is
    one line before a long run rather than after it."""
    if not (args.minimums or args.baseline or args.drops or args.junit):
        return False
    if not args.minimums and not args.baseline:
        raise UserError("--max-drop, --junit and --max-infrastructure gate the run: add --min METRIC=VALUE or "
                        "--baseline OTHER_RUN_DIR")  # fmt: skip
    if args.drops and not args.baseline:
        raise UserError("--max-drop compares with a baseline run: add --baseline OTHER_RUN_DIR")
    if args.baseline is None:
        return None
    from mcp_hazard.scoring.gate import load_run

    if Path(args.baseline).resolve() == Path(args.out).resolve():
        raise UserError(f"--baseline {args.baseline} is this run's own --out folder; a baseline is another run")
    return load_run(args.baseline, "--baseline")


def gate_after_run(args: argparse.Namespace, baseline: Any, code: int) -> int:
    """`run --min/--baseline`: gate the run folder just scored; the worse of the run's and the gate's exit codes."""
    from mcp_hazard.scoring.gate import evaluate, load_run

    print()
    gated = report(evaluate(load_run(args.out, "--out"), _spec(args, baseline)), args)
    return max(code, gated)


HELP = "gate a finished run for CI: minimums with intervals, paired tests against a baseline run"
EXAMPLES = [
    (
        "mcp-hazard gate runs/pr --min overall=0.8 --min recovery.transient_error=0.9",
        "minimums, each failing only when its interval's upper bound is under it",
    ),
    (
        "mcp-hazard gate runs/pr --baseline runs/main",
        "fail on a significant drop in overall success, episode by episode",
    ),
    (
        "mcp-hazard gate runs/pr --baseline runs/main --max-drop hazard_kind.pagination=10 --junit junit.xml",
        "allow up to 10 points under pagination; a JUnit report for CI",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    description = (
        HELP[0].upper() + HELP[1:] + ". Exit 0 pass, 1 a check failed, 2 a usage or input error. With "
        "GITHUB_STEP_SUMMARY set, a Markdown summary is appended to that file (docs/ci.md)."
    )
    parser = command_parser(commands, "gate", HELP, EXAMPLES, description)
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (its report.json)")
    add_gate_options(parser)
    parser.add_argument("--agent", action="append", default=None, metavar="NAME",
                        help="gate only this agent of the run (repeatable; default: every agent)")  # fmt: skip
    parser.add_argument("--format", choices=["text", "json"], default="text", help="standard output: text or JSON")
    parser.set_defaults(handler=gate_command)
    return parser

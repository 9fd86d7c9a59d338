"""The parser of `mcp-hazard plan` (commands/plan.py runs it), kept apart as `generate`'s is: cli.py builds it only
when `plan` runs or the whole parser is asked for."""

from __future__ import annotations

import argparse
from typing import Any

from mcp_hazard.commands.examples import epilog
from mcp_hazard.commands.flag_values import fraction


def add_plan_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `plan` to the CLI's subparsers; returns its parser."""
    text = "how many seeds or repeats a run needs to detect a given drop in success"
    plan = subparsers.add_parser("plan", help=text, description=text[0].upper() + text[1:] + ".",
                                 epilog=epilog("plan"))  # fmt: skip
    plan.add_argument("paths", nargs="+", help="scenario files or directories (the suite)")
    plan.add_argument("--drop", type=fraction, required=True, metavar="SHARE",
                      help="the drop in success to detect, e.g. 0.1 or 10%% (10 points)")  # fmt: skip
    plan.add_argument("--scenario", action="append", default=None, metavar="ID", help="as for run (repeatable)")
    plan.add_argument("--task", action="append", default=None, metavar="ID", help="as for run (repeatable)")
    plan.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                      help="the hazard conditions, as for run (repeatable; default all)")  # fmt: skip
    plan.add_argument("--intervention", action="append", default=None, metavar="NAME",
                      help="the intervention conditions, as for run (repeatable; default none)")  # fmt: skip
    plan.add_argument("--profile", default="strict", help="comma-separated profiles, as for run (default strict)")
    plan.add_argument(
        "--pilot",
        metavar="RUN_DIR",
        help="a pilot run of the same matrix: each comparison's discordance is measured there",
    )
    plan.add_argument(
        "--base-rate",
        type=fraction,
        default=None,
        metavar="SHARE",
        help="without a pilot: the success rate expected clean (default: the worst case)",
    )
    plan.add_argument("--alpha", type=fraction, default=0.05, help="two-sided significance level (default 0.05)")
    plan.add_argument("--power", type=fraction, default=0.8, help="chance to detect the drop (default 0.8)")
    plan.add_argument("--json", action="store_true", help="print as JSON")
    plan.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    return plan

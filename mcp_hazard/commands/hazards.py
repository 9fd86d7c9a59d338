"""`hazards`: the hazard kinds, their parameters and recovery paths, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mcp_hazard.commands.options import command_parser


def hazards(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from mcp_hazard.hazards import describe_kinds

    kinds = describe_kinds()
    if args.json:
        print(json.dumps(kinds, indent=2))
        return 0
    table = Table(title="Hazard kinds (--hazard KIND[:key=value,...]; schedule keys: probability, slots, after_calls, "
                  "times, tools)", show_lines=True)  # fmt: skip
    for column in ("kind", "family", "recovery", "failpoints", "default schedule", "params", "what it does"):
        table.add_column(column)
    for kind in kinds:
        params = ", ".join(f"{name}={spec.get('default')}" for name, spec in kind["params"].items()) or "-"
        schedule = ", ".join(f"{k}={v}" for k, v in kind["default_schedule"].items()) or "every call"
        table.add_row(kind["kind"], kind["family"], ", ".join(kind["recovery"]), ", ".join(kind["failpoints"]),
                      schedule, params, kind["summary"])  # fmt: skip
    Console(width=max(Console().width, 160)).print(table)
    return 0


HELP = "list the hazard kinds, their parameters and recovery paths"
EXAMPLES = [
    ("mcp-hazard hazards", "the kinds as a table"),
    ("mcp-hazard hazards --json", "the same as JSON"),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "hazards", HELP, EXAMPLES)
    parser.add_argument("--json", action="store_true", help="print as JSON")
    parser.set_defaults(handler=hazards)
    return parser

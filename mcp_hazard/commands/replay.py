"""`replay`: re-run the client actions of a trace (or a script) and compare the new trace."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mcp_hazard.commands import EXIT_FINDING
from mcp_hazard.commands.options import allow_python, command_parser
from mcp_hazard.terminal_text import visible


def replay(args: argparse.Namespace) -> int:
    # What is replayed is read and checked first: a bad path or a changed scenario is one line before the SDK loads.
    from mcp_hazard.runner.replay_source import read_recorded, read_script

    if args.trace.endswith((".yaml", ".yml")):
        script = read_script(args.trace, allow_python=args.allow_python)
        from mcp_hazard.runner.replay_check import replay_script

        return replay_script(script, transport=args.transport)
    recorded = read_recorded(args.trace, scenarios=args.scenarios, allow_python=args.allow_python)
    from mcp_hazard.runner.replay_check import replay_trace

    _old, new, difference = replay_trace(recorded, transport=args.transport)
    if difference is not None:
        print(visible(f"mcp-hazard: replay differs from {args.trace}: {difference}", one_line=True), file=sys.stderr)
        return EXIT_FINDING
    print(f"replay: {len(new.events)} events, identical to {args.trace} apart from times, durations and the run block")
    return 0


HELP = "re-run a trace's agent actions and check the new trace is the same"
EXAMPLES = [
    (
        "mcp-hazard replay runs/matrix/traces/naive.travel.cheapest-trip.clean.strict.s0.jsonl",
        "re-run a trace's calls; exit 1 on the first difference",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "replay", HELP, EXAMPLES)
    parser.add_argument("trace", help="a trace (.jsonl), or a replay script (.yaml: scenario, task, calls, answer)")
    parser.add_argument("--transport", choices=["memory", "stdio", "http"], default="memory")
    parser.add_argument("--scenarios", help="folder with the scenario file, if it moved")
    allow_python(parser)
    parser.set_defaults(handler=replay)
    return parser

"""`replay`: re-run the client actions of a trace (or a script) and compare the new trace."""

from __future__ import annotations

import argparse
import sys

from mcp_hazard.commands import EXIT_FINDING


def replay(args: argparse.Namespace) -> int:
    from mcp_hazard.runner.replay import replay_script, replay_trace

    if args.trace.endswith((".yaml", ".yml")):
        return replay_script(args.trace, transport=args.transport, allow_python=args.allow_python)
    _old, new, difference = replay_trace(args.trace, transport=args.transport, scenarios=args.scenarios,
                                        allow_python=args.allow_python)  # fmt: skip
    if difference is not None:
        print(f"mcp-hazard: replay differs from {args.trace}: {difference}", file=sys.stderr)
        return EXIT_FINDING
    print(f"replay: {len(new.events)} events, identical to {args.trace} apart from times, durations and the run block")
    return 0

"""`verify`: prove every hazard instance solvable (recovering agent) and biting (naive agent)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from mcp_hazard.commands import EXIT_FINDING
from mcp_hazard.commands.flag_values import parse_seeds, positive
from mcp_hazard.commands.options import (
    allow_python,
    command_parser,
    default_concurrency,
    hazard_options,
    scenario_paths,
)
from mcp_hazard.commands.run_folder import locked
from mcp_hazard.terminal_text import visible


def verify(args: argparse.Namespace) -> int:
    import tempfile

    import anyio

    from mcp_hazard.agentdojo.sources import load_sources
    from mcp_hazard.interventions.by_name import parse_composition
    from mcp_hazard.runner.matrix import plan

    # the scenarios, the options and the plan are checked before the runner (and with it the SDK) is loaded
    scenarios = load_sources(args.paths, allow_python=args.allow_python)
    interventions = [parse_composition(text) for text in args.intervention]
    hazards = hazard_options(args.hazard)
    planned = plan(scenarios, ["naive", "recovering"], hazards, ["strict"], args.seeds, interventions)
    # the naive agent never obeys an injected instruction: the obedient agent proves that injection bites
    obeying = [cell for cell in plan(scenarios, ["obedient"], hazards, ["strict"], args.seeds)
               if any(spec.kind == "injection" for spec in cell.hazards)]  # fmt: skip

    from mcp_hazard.runner.run import Runner
    from mcp_hazard.runner.verification import check
    from mcp_hazard.scoring.collect import score_traces

    # under an intervention only solvability counts, so the naive agent sits those out
    cells = [cell for cell in planned if not (cell.interventions and cell.agent == "naive")] + obeying
    concurrency = args.concurrency or default_concurrency(args.transport, [], external=False, proxied=False)
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-verify-") as scratch:
        out = Path(args.out or scratch)
        with locked(out) if args.out else contextlib.nullcontext():  # a folder of the user's: checked, one run at once
            runner = Runner(out, transport=args.transport, concurrency=concurrency, timeout_s=60,
                            call_timeout_s=1.0, show_progress=False)  # fmt: skip
            anyio.run(runner.run, cells)
            scores = score_traces([str(out / "traces")], allow_python=args.allow_python).scores
    checked, found = check(cells, scores)
    findings = [finding for finding in found if not finding.explained]
    for finding in findings:
        print(visible(f"mcp-hazard: {finding}", one_line=True), file=sys.stderr)
    explained = [finding for finding in found if finding.explained]
    for finding in explained:  # not the hazard's doing: said with the reason, not counted as a problem
        print(visible(f"verify: exception: {finding}; {finding.explained}", one_line=True))
    verdict = "all solvable, all biting" if not findings else f"{len(findings)} problem(s)"
    if explained:
        verdict += f" ({len(explained)} exception(s) above, each AgentDojo's own)"
    if interventions and not findings:
        verdict += "; solvable under every intervention"
    if obeying:
        verdict += f"; injection's bite proven by the obedient agent ({len(obeying)} episodes)"
    print(f"verify: {checked} instances ({len(cells)} episodes over {args.transport}): {verdict}")
    return EXIT_FINDING if findings else 0


HELP = "prove every hazard instance solvable (recovering) and biting (naive)"
EXAMPLES = [
    ("mcp-hazard verify scenarios/ --seeds 0-4", "every hazard instance solvable and biting"),
    ("mcp-hazard verify scenarios/travel.yaml --intervention all", "also solvable under each intervention"),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "verify", HELP, EXAMPLES)
    scenario_paths(parser)
    parser.add_argument("--seeds", type=parse_seeds, default=[0, 1], help="seeds (default 0-1)")
    parser.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                        help="hazards to check (repeatable; default all)")  # fmt: skip
    parser.add_argument("--intervention", action="append", default=[], metavar="NAME",
                        help="also prove every instance solvable under this intervention (repeatable; a+b composes; "
                             "'all' = each alone)")  # fmt: skip
    parser.add_argument("--transport", choices=["memory", "stdio", "http"], default="memory")
    parser.add_argument("--concurrency", type=positive, default=None, metavar="N",
                        help="episodes at once (default 16; 4 with --transport stdio)")  # fmt: skip
    parser.add_argument("--out", help="keep the traces here (default: a temporary folder)")
    allow_python(parser)
    parser.set_defaults(handler=verify)
    return parser

"""`mcp-hazard generate dag`: write generated scenario files (the generator itself is the `generate` package).

`add_parser` adds the command (and its kinds, `dag` and `suite`) to the CLI; `generate_command(args)` runs it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mcp_hazard.commands import ERROR_PREFIX, EXIT_USAGE
from mcp_hazard.commands.options import command_parser, epilog
from mcp_hazard.generate.dag import MAX_FUNCTIONS, Knobs
from mcp_hazard.generate.graph_scenario import scenario_id
from mcp_hazard.generate.variable_names import POLICIES
from mcp_hazard.generate.write import seed_series, write_scenario

MAX_COUNT = 10_000


def _whole(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value

    return parse


HELP = "write generated scenario files (contamination-free tasks)"
EXAMPLES = [
    (
        "mcp-hazard generate dag --core 5 --depth 3 --seed 1 --count 10 --out gen/",
        "ten generated tool graphs with five functions on the golden path",
    ),
    ("mcp-hazard generate suite --out scenarios/suite", "the shipped suite's generated files, byte for byte"),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `generate` (with its kinds, `dag` and `suite`) to the CLI's subparsers; returns the `generate` parser."""
    generate = command_parser(commands, "generate", HELP, EXAMPLES)
    generate.set_defaults(handler=generate_command)
    kinds = generate.add_subparsers(dest="generate_kind", required=True, metavar="KIND")
    dag = kinds.add_parser(
        "dag", help="a DAG of functions over typed integers, with distractors and silent wrong values",
        description="Write scenario files whose task is to chain generated functions from given inputs to a target. "
        "The same arguments always give the same files, byte for byte (docs/generator.md).",
        epilog=epilog(EXAMPLES),
    )  # fmt: skip
    _dag_options(dag)
    suite = kinds.add_parser(
        "suite", help="the shipped benchmark suite: ten domains of natural tasks (docs/suite.md)",
        description="Write the shipped suite's generated scenario files, one per domain (suite-DOMAIN.yaml): a "
        "seeded world per domain and task templates. The output is what scenarios/suite holds, byte for byte.",
        epilog=epilog(EXAMPLES),
    )  # fmt: skip
    suite.add_argument("--out", required=True, metavar="DIR", help="folder for the files (suite-<DOMAIN>.yaml)")
    return generate


def _dag_options(dag: argparse.ArgumentParser) -> None:
    knob = _whole(0, MAX_FUNCTIONS)
    dag.add_argument("--core", type=_whole(1, MAX_FUNCTIONS), default=4, metavar="N",
                     help="functions on the golden path (default 4)")  # fmt: skip
    dag.add_argument("--depth", type=knob, default=2, metavar="N",
                     help="dependency depth: edges on the longest path of core functions; 1 = a star, CORE-1 = a "
                     "path (default 2)")  # fmt: skip
    dag.add_argument("--connected", type=knob, default=2, metavar="N",
                     help="distractors that take variables of the core (default 2)")  # fmt: skip
    dag.add_argument("--disconnected", type=knob, default=2, metavar="N",
                     help="distractors over types the core does not use (default 2)")  # fmt: skip
    dag.add_argument(
        "--seed", type=_whole(0, 2**63 - 1), default=0, metavar="SEED", help="seed of the first task (default 0)"
    )
    dag.add_argument("--names", choices=POLICIES, default="random",
                     help="names of tools and variables: random tokens (default), meaningful, realistic but "
                     "unrelated, contradicting (real cause-effect pairs served the other way round) or "
                     "random-realistic (real entity names, no familiar relation)")  # fmt: skip
    dag.add_argument(
        "--restate",
        action="store_true",
        help="every result also restates every variable value known so far (given and obtained)",
    )
    dag.add_argument("--count", type=_whole(1, MAX_COUNT), default=1, metavar="N",
                     help="tasks to write, with seeds SEED to SEED+N-1 (default 1)")  # fmt: skip
    dag.add_argument("--out", required=True, metavar="DIR", help="folder for the files (dag-s<SEED>.yaml)")


def _knobs(args: argparse.Namespace) -> Knobs:
    return Knobs(core=args.core, depth=args.depth, connected=args.connected, disconnected=args.disconnected,
                 seed=args.seed, names=args.names, restate=args.restate)  # fmt: skip


def _suite(out: Path) -> int:
    from mcp_hazard.generate.suite.shipped import write_suite

    try:
        for path in write_suite(out):
            print(f"wrote {path}")
    except OSError as exc:
        print(f"{ERROR_PREFIX}{exc.filename or out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def generate_command(args: argparse.Namespace) -> int:
    """Run `mcp-hazard generate KIND ...`: 0 when every file was written, 2 for bad knobs or a folder that cannot be
    written (both are input errors)."""
    if args.generate_kind == "suite":
        return _suite(Path(args.out))
    knobs = _knobs(args)
    problem = knobs.problem()
    if problem is None and knobs.seed + args.count - 1 >= 2**63:
        problem = f"--seed {knobs.seed} with --count {args.count} goes past the largest seed, 2**63-1"
    if problem is not None:
        print(f"{ERROR_PREFIX}generate dag: {problem}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for each in seed_series(knobs, args.count):
            path = write_scenario(each, out)
            print(f"wrote {path} ({scenario_id(each)})")
    except OSError as exc:
        print(f"{ERROR_PREFIX}{exc.filename or out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0

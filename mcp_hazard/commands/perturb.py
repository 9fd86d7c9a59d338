"""`perturb`: the listing an agent would see under interventions, as YAML."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mcp_hazard.commands.flag_values import seed
from mcp_hazard.commands.options import command_parser
from mcp_hazard.commands.output_file import write_output
from mcp_hazard.errors import UserError
from mcp_hazard.suggest import did_you_mean
from mcp_hazard.terminal_text import visible


def perturb(args: argparse.Namespace) -> int:
    import yaml

    from mcp_hazard.condition import Condition
    from mcp_hazard.interventions import parse_intervention
    from mcp_hazard.load import load_scenario
    from mcp_hazard.server.served_episode import Episode

    loaded = load_scenario(args.path)
    task = loaded.model.tasks[0] if args.task is None else loaded.model.task(args.task)
    if task is None:
        known = [t.id for t in loaded.model.tasks]
        hint = did_you_mean(args.task, known)
        raise UserError(f"{args.path}: no task {args.task!r}{hint}; its tasks: {', '.join(known)}")
    names = [parse_intervention(name) for name in args.intervention]
    if "all" in names:
        raise UserError("--intervention 'all' is for `run`; name the interventions to perturb with")
    condition = Condition(seed=args.seed, interventions=names)
    episode = Episode(episode_id="perturb", scenario=loaded, task=task, condition=condition, trace_dir=None,
                      transport="memory")  # fmt: skip
    listing = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in episode.served_tools()]
    document = {"scenario": loaded.id, "task": task.id, "seed": args.seed, "interventions": names,
                "prompt": episode.prompt_text(), "tools": listing}  # fmt: skip
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)
    if args.out:
        write_output(args.out, text, "the listing")
        print(f"mcp-hazard: wrote the perturbed listing of {loaded.id}/{task.id} to {args.out}", file=sys.stderr)
    else:
        print(visible(text), end="")
    return 0


HELP = "write the tool listing as the agent sees it under interventions"
EXAMPLES = [
    (
        "mcp-hazard perturb scenarios/travel.yaml --intervention rename --seed 1",
        "the tool listing an agent sees under an intervention",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "perturb", HELP, EXAMPLES)
    parser.add_argument("path", help="a scenario file")
    parser.add_argument("--intervention", action="append", default=[], metavar="NAME", required=True)
    parser.add_argument("--seed", type=seed, default=0)
    parser.add_argument("--task", help="task id (default: the first)")
    parser.add_argument("--out", help="write here instead of standard output")
    parser.set_defaults(handler=perturb)
    return parser

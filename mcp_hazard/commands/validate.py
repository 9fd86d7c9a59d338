"""`validate`: check scenario files, run every golden path, prove declared hazards solvable."""

from __future__ import annotations

import argparse
import sys
from typing import Any, cast

from mcp_hazard.commands import EXIT_FINDING, EXIT_USAGE
from mcp_hazard.commands.flag_values import parse_seeds
from mcp_hazard.commands.options import allow_python, command_parser, hazard_options, scenario_paths
from mcp_hazard.errors import ScenarioError
from mcp_hazard.terminal_text import visible


def validate(args: argparse.Namespace) -> int:
    """Exit 2 when a file cannot be used (its problems are input errors) or a named hazard can act in none of the
    files' tasks, else 1 when a golden path or a hazard instance is unsolvable (a finding about a valid file), else
    0. Every file is read before any golden path runs, so a hazard that fits nothing is said before any work."""
    import anyio

    from mcp_hazard.agentdojo.sources import load_named, split_sources
    from mcp_hazard.hazards.fit import check_fits
    from mcp_hazard.load import load_scenario
    from mcp_hazard.scenario.files import scenario_files

    named = hazard_options(args.hazard)  # a bad --hazard is one line before any file is read
    options = ["declared", *named]
    invalid = unsolvable_files = 0
    seen: dict[str, str] = {}
    valid = []
    paths, sources = split_sources(args.paths)
    suites = load_named(sources)  # an unknown suite or version, or AgentDojo missing: one line before any work
    for file in scenario_files(paths) if paths else []:
        try:
            loaded = load_scenario(file, allow_python=args.allow_python)
        except ScenarioError as exc:
            invalid += 1
            for problem in exc.problems:
                print(visible(str(problem), one_line=True), file=sys.stderr)
            continue
        if loaded.id in seen:
            invalid += 1
            print(f"{file}: id: scenario id {loaded.id!r} is also used by {seen[loaded.id]}", file=sys.stderr)
            continue
        seen[loaded.id] = str(file)
        valid.append((file, loaded))
    check_fits(named, [(loaded.model, task) for _, loaded in [*valid, *((s.path, s) for s in suites)]
                       for task in loaded.model.tasks], "so no instance of it would be checked")  # fmt: skip
    for file, loaded in valid:
        tasks = len(loaded.model.tasks)
        checked, unsolvable = anyio.run(_check_solvable, loaded, args, options)
        for line in unsolvable:
            print(visible(f"{file}: unsolvable: {line}", one_line=True), file=sys.stderr)
        unsolvable_files += bool(unsolvable)
        hazards = f", {checked} hazard instances solvable" if checked and not unsolvable else ""
        if not unsolvable:
            print(f"{file}: ok ({loaded.id}: {len(loaded.model.tools)} tools, {tasks} tasks, "
                  f"golden paths reach answers{hazards}{_unfit(named, loaded)})")  # fmt: skip
    for suite in suites:
        unsolvable_files += _validate_suite(suite, named)
    return EXIT_USAGE if invalid else EXIT_FINDING if unsolvable_files else 0


def _validate_suite(suite: Any, named: list[Any]) -> bool:
    """An AgentDojo suite: its facts table was checked as it loaded; every golden path must pass AgentDojo's check.
    Its hazard instances are proven by `verify`, which runs the reference agents. True when a golden path fails."""
    import anyio

    from mcp_hazard.agentdojo.check import check_suite

    problems = anyio.run(check_suite, suite)
    for line in problems:
        print(visible(f"{suite.path}: unsolvable: {line}", one_line=True), file=sys.stderr)
    if not problems:
        hazards = f"; hazard instances: mcp-hazard verify {suite.path}" if named else ""
        print(f"{suite.path}: ok ({suite.id}: {len(suite.model.tools)} tools, {len(suite.model.tasks)} tasks, "
              f"golden paths pass AgentDojo's checks{hazards})")  # fmt: skip
    return bool(problems)


def _unfit(named: list[Any], loaded: Any) -> str:
    """`; --hazard KIND fits none of its tasks` for each named hazard this file gave no instance (others did)."""
    from mcp_hazard.hazards.fit import spec_label
    from mcp_hazard.hazards.instances import unfit_reason
    from mcp_hazard.scenario.hazard_spec import HazardSpec

    idle = [spec_label(spec) for spec in named if isinstance(spec, HazardSpec) and spec.tools is None
            and all(unfit_reason(spec, loaded.model, task) for task in loaded.model.tasks)]  # fmt: skip
    return "".join(f"; --hazard {label} can act in none of its tasks" for label in idle)


async def _check_solvable(loaded: Any, args: argparse.Namespace, options: list[Any]) -> tuple[int, list[str]]:
    """Every (task, seed) under the declared hazards plus --hazard ones; returns instances checked and failures.
    Every hazard is checked against every task before the server is imported: a bad one is a quick one-line error."""
    from mcp_hazard.condition import Condition
    from mcp_hazard.hazards.instances import applicable_options

    # a kind that fits no tool of a task is skipped there
    cells = [
        (task, usable) for task in loaded.model.tasks if (usable := applicable_options(options, loaded.model, task))
    ]
    if not cells:
        return 0, []
    from mcp_hazard.runner.solvability import check_instance

    checked, failures = 0, []
    for task, usable in cells:
        condition = Condition(profile=args.profile, hazards=cast(list[Any], usable))
        for seed in args.seeds:
            checked += 1
            problem = await check_instance(loaded, task, condition.model_copy(update={"seed": seed}))
            if problem is not None:
                failures.append(str(problem))
    return checked, failures


HELP = "check scenario files and prove each golden path works"
EXAMPLES = [
    ("mcp-hazard validate scenarios/", "check every shipped scenario and run its golden paths"),
    (
        "mcp-hazard validate scenarios/travel.yaml --hazard all --seeds 0-19",
        "also prove every hazard kind solvable for 20 seeds",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "validate", HELP, EXAMPLES)
    scenario_paths(parser)
    allow_python(parser)
    parser.add_argument(
        "--hazard", action="append", default=[], metavar="KIND[:key=value,...]",
        help="also prove these hazards solvable (repeatable; 'all' = every kind that applies); declared ones always",
    )  # fmt: skip
    parser.add_argument("--seeds", type=parse_seeds, default=list(range(5)), help="seeds to check, e.g. 0-19 or 1,5,9")
    parser.add_argument("--profile", choices=["strict", "guided", "guarded"], default="strict")
    parser.set_defaults(handler=validate)
    return parser

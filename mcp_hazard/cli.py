"""The `mcp-hazard` command. Every user error ends in one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

import anyio

from mcp_hazard import __version__
from mcp_hazard.errors import ScenarioError, UserError

EXIT_USAGE = 2
EXIT_INVALID = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be a whole number, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"seed must be between 0 and 2**63-1, got {value}")
    return value


def _seeds(text: str) -> list[int]:
    """`0-19`, `1,5,9` or a mix: the seeds a check or a run covers."""
    seeds: list[int] = []
    for part in filter(None, text.split(",")):
        low, sep, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if sep else first
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected seeds like 0-19 or 1,5,9, got {text!r}") from None
        if first < 0 or last < first or last - first > 100_000:
            raise argparse.ArgumentTypeError(f"bad seed range {part!r}")
        seeds.extend(range(first, last + 1))
    if not seeds:
        raise argparse.ArgumentTypeError("no seeds given")
    return seeds


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"must be between 0 and 86400 seconds, got {value:g}")
    return value


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT such as 127.0.0.1:8765, got {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {number}")
    return host.strip("[]") or "127.0.0.1", number


def _condition_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hazard", action="append", default=[], metavar="KIND[:key=value,...]",
        help="inject a hazard (repeatable); 'all' = every kind that applies, 'declared' = the scenario's own",
    )  # fmt: skip
    parser.add_argument("--profile", choices=["strict", "guided"], default="strict",
                        help="strict: errors say what is wrong; guided: they also suggest a recovery")  # fmt: skip
    parser.add_argument("--intervention", action="append", default=[], metavar="NAME",
                        help="interface intervention (repeatable, composed in order): rename, reorder, augment, "
                        "replace, names=random, names=realistic, substitute")  # fmt: skip


def _hazard_options(values: list[str]) -> list[Any]:
    from mcp_hazard.hazards import parse_hazard_option

    options: list[Any] = []
    for value in values:
        parsed = parse_hazard_option(value)
        options.extend(parsed if isinstance(parsed, list) else [parsed])
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcp-hazard", description="An MCP server that plays an unreliable tool environment.")
    parser.add_argument("--version", action="version", version=f"mcp-hazard {__version__}")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="stderr log level")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    validate = commands.add_parser("validate", help="check scenario files and prove each golden path works")
    validate.add_argument("paths", nargs="+", help="scenario files or directories")
    validate.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    validate.add_argument(
        "--hazard", action="append", default=[], metavar="KIND[:key=value,...]",
        help="also prove these hazards solvable (repeatable; 'all' = every kind that applies); declared ones always",
    )  # fmt: skip
    validate.add_argument("--seeds", type=_seeds, default=list(range(5)), help="seeds to check, e.g. 0-19 or 1,5,9")
    validate.add_argument("--profile", choices=["strict", "guided"], default="strict")

    serve = commands.add_parser("serve", help="serve episodes over stdio (one) or Streamable HTTP (many)")
    serve.add_argument("path", help="a scenario file, or a directory of them")
    serve.add_argument("--scenario", help="scenario id, when PATH holds several (stdio)")
    serve.add_argument("--task", help="task id (stdio; default: the scenario's first task)")
    serve.add_argument("--seed", type=_seed, default=0, help="seed of the condition (stdio; default 0)")
    serve.add_argument("--trace-dir", default="runs", help="where trace files go (default: ./runs)")
    serve.add_argument("--episode-id", help="name of the episode and its trace file (stdio)")
    serve.add_argument("--agent", help="name of the agent under test, recorded in the trace (stdio)")
    _condition_options(serve)
    serve.add_argument("--http", type=_host_port, metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    serve.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")

    commands.add_parser("schema", help="print the JSON Schema of the scenario format")

    hazards = commands.add_parser("hazards", help="list the hazard kinds, their parameters and recovery paths")
    hazards.add_argument("--json", action="store_true", help="print as JSON")

    score = commands.add_parser("score", help="score traces: answers, recovery, robustness; write reports")
    score.add_argument("paths", nargs="+", help="trace files or directories of them")
    score.add_argument("--format", choices=["table", "json", "markdown", "html"], default="table")
    score.add_argument("--out", help="write the report to this file (format from --format, or from the suffix)")
    score.add_argument("--scenarios", help="folder of scenario files to use instead of the paths in the traces")
    score.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")

    run = commands.add_parser("run", help="run agents over a matrix of conditions and print the scorecard")
    run.add_argument("paths", nargs="+", help="scenario files or directories")
    run.add_argument("--agent", action="append", default=None,
                     help="built-in agent: naive, naive-positional, recovering, golden, llm "
                          "(repeatable; default: naive and recovering)")  # fmt: skip
    run.add_argument("--agent-cmd", action="append", default=[], metavar="'CMD ...'",
                     help="an external agent program (repeatable); see docs/agents.md")  # fmt: skip
    run.add_argument("--seeds", type=_seeds, default=[0], help="seeds, e.g. 1-5 or 1,3 (default 0)")
    run.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                     help="a hazard condition (repeatable; default all: each applicable kind alone)")  # fmt: skip
    run.add_argument("--profile", default="strict", help="comma-separated profiles: strict, guided (default strict)")
    run.add_argument("--intervention", action="append", default=None, metavar="NAME",
                     help="an intervention condition (repeatable): a name, names joined with '+' to compose them "
                          "in order (replace+reorder), or 'all' = each alone; default none")  # fmt: skip
    run.add_argument("--transport", choices=["memory", "stdio", "http"], default="http",
                     help="how agents reach the server (default http: one real server on 127.0.0.1)")  # fmt: skip
    run.add_argument("--concurrency", type=_positive, default=4, help="episodes at once (default 4)")
    run.add_argument("--timeout", type=_positive_float, default=60.0, help="seconds per episode (default 60)")
    run.add_argument("--call-timeout", type=_positive_float, default=2.0,
                     help="seconds a reference agent waits for one tool call (default 2)")  # fmt: skip
    run.add_argument("--out", default="runs/matrix", help="run folder: traces, run log, reports (default runs/matrix)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    verify = commands.add_parser("verify", help="prove every hazard instance solvable (recovering) and biting (naive)")
    verify.add_argument("paths", nargs="+", help="scenario files or directories")
    verify.add_argument("--seeds", type=_seeds, default=[0, 1], help="seeds (default 0-1)")
    verify.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                        help="hazards to check (repeatable; default all)")  # fmt: skip
    verify.add_argument("--transport", choices=["memory", "stdio", "http"], default="memory")
    verify.add_argument("--concurrency", type=_positive, default=4)
    verify.add_argument("--out", help="keep the traces here (default: a temporary folder)")
    verify.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")

    perturb = commands.add_parser("perturb", help="write the tool listing as the agent sees it under interventions")
    perturb.add_argument("path", help="a scenario file")
    perturb.add_argument("--intervention", action="append", default=[], metavar="NAME", required=True)
    perturb.add_argument("--seed", type=_seed, default=0)
    perturb.add_argument("--task", help="task id (default: the first)")
    perturb.add_argument("--out", help="write here instead of standard output")

    from mcp_hazard.generate import add_generate_parser

    add_generate_parser(commands)

    replay = commands.add_parser("replay", help="re-run a trace's agent actions and check the new trace is the same")
    replay.add_argument("trace", help="a trace (.jsonl), or a replay script (.yaml: scenario, task, calls, answer)")
    replay.add_argument("--transport", choices=["memory", "stdio", "http"], default="memory")
    replay.add_argument("--scenarios", help="folder with the scenario file, if it moved")
    replay.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    return parser


def _validate(args: argparse.Namespace) -> int:
    from mcp_hazard.scenario.load import load_scenario, scenario_files

    failed = 0
    seen: dict[str, str] = {}
    for file in scenario_files(args.paths):
        try:
            loaded = load_scenario(file, allow_python=args.allow_python)
        except ScenarioError as exc:
            failed += 1
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            continue
        if loaded.id in seen:
            failed += 1
            print(f"{file}: id: scenario id {loaded.id!r} is also used by {seen[loaded.id]}", file=sys.stderr)
            continue
        seen[loaded.id] = str(file)
        tasks = len(loaded.model.tasks)
        checked, unsolvable = anyio.run(_check_solvable, loaded, args)
        for line in unsolvable:
            print(f"{file}: unsolvable: {line}", file=sys.stderr)
        failed += bool(unsolvable)
        hazards = f", {checked} hazard instances solvable" if checked and not unsolvable else ""
        if not unsolvable:
            print(f"{file}: ok ({loaded.id}: {len(loaded.model.tools)} tools, {tasks} tasks, "
                  f"golden paths reach answers{hazards})")  # fmt: skip
    return EXIT_INVALID if failed else 0


async def _check_solvable(loaded: Any, args: argparse.Namespace) -> tuple[int, list[str]]:
    """Every (task, seed) under the declared hazards plus --hazard ones; returns instances checked and failures."""
    from mcp_hazard.condition import Condition
    from mcp_hazard.hazards.build import applicable_options
    from mcp_hazard.hazards.solvability import check_instance

    options = ["declared", *_hazard_options(args.hazard)]
    checked, failures = 0, []
    for task in loaded.model.tasks:
        usable = applicable_options(options, loaded.model, task)  # a kind that fits no tool of this task is skipped
        if not usable:
            continue
        condition = Condition(profile=args.profile, hazards=cast(list[Any], usable))
        for seed in args.seeds:
            checked += 1
            problem = await check_instance(loaded, task, condition.model_copy(update={"seed": seed}))
            if problem is not None:
                failures.append(str(problem))
    return checked, failures


def _serve(args: argparse.Namespace) -> int:
    from mcp_hazard.condition import Condition
    from mcp_hazard.scenario.load import load_scenarios
    from mcp_hazard.server.episodes import EpisodeRegistry

    scenarios = load_scenarios([args.path], allow_python=args.allow_python)
    trace_dir = Path(args.trace_dir)
    if args.http:
        import uvicorn

        from mcp_hazard.logs import log
        from mcp_hazard.server.http import LOOPBACK, build_http_app

        host, port = args.http
        if host not in LOOPBACK:
            log.warning("serving beyond loopback: anyone who reaches this address can run episodes", host=host)
        registry = EpisodeRegistry(scenarios, trace_dir, transport="http", allow_python=args.allow_python)
        print(f"mcp-hazard: serving {len(scenarios)} scenario(s) on http://{host}:{port}; "
              f"create an episode with POST /episodes", file=sys.stderr)  # fmt: skip
        uvicorn.run(build_http_app(registry, host=host), host=host, port=port, log_level="warning")
        return 0
    from mcp_hazard.server.stdio import serve_stdio

    if args.scenario is None and len(scenarios) > 1:
        raise UserError(f"{args.path} holds {len(scenarios)} scenarios; pick one with --scenario")
    registry = EpisodeRegistry(scenarios, trace_dir, transport="stdio", allow_python=args.allow_python)
    from mcp_hazard.interventions import parse_intervention

    interventions = [parse_intervention(name) for name in args.intervention]
    if "all" in interventions:
        raise UserError("--intervention all is for `run` (one condition per intervention); name them for serve")
    condition = Condition(
        seed=args.seed, profile=args.profile, hazards=_hazard_options(args.hazard), interventions=interventions
    )
    episode = registry.create(args.scenario, args.task, condition, args.episode_id, args.agent)
    anyio.run(serve_stdio, episode)
    return 0


def _schema(args: argparse.Namespace) -> int:
    from mcp_hazard.scenario.models import scenario_json_schema

    print(json.dumps(scenario_json_schema(), indent=2))
    return 0


def _hazards(args: argparse.Namespace) -> int:
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


SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".html": "html", ".htm": "html", ".txt": "table"}


def _score(args: argparse.Namespace) -> int:
    from mcp_hazard.scoring.aggregate import aggregate
    from mcp_hazard.scoring.collect import score_traces
    from mcp_hazard.scoring.report import render

    scored = score_traces(args.paths, scenarios=args.scenarios, allow_python=args.allow_python)
    report = aggregate(scored.scores, scored.warnings)
    fmt = args.format
    if args.out and fmt == "table":
        fmt = SUFFIX_FORMATS.get(Path(args.out).suffix.lower(), "table")
    text = render(report, fmt)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"{args.out}: cannot write report: {exc.strerror or exc}") from None
        print(f"mcp-hazard: wrote {fmt} report of {report['episodes']} episodes to {args.out}", file=sys.stderr)
    else:
        print(text)
    for warning in scored.warnings:
        print(f"mcp-hazard: warning: {warning}", file=sys.stderr)
    return 0 if scored.scores else EXIT_INVALID


def _verify(args: argparse.Namespace) -> int:
    import tempfile

    from mcp_hazard.runner.command import _hazards
    from mcp_hazard.runner.matrix import plan
    from mcp_hazard.runner.run import Runner
    from mcp_hazard.runner.verify import check
    from mcp_hazard.scenario.load import load_scenarios
    from mcp_hazard.scoring.collect import score_traces

    scenarios = load_scenarios(args.paths, allow_python=args.allow_python)
    cells = plan(scenarios, ["naive", "recovering"], _hazards(args.hazard), ["strict"], args.seeds)
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-verify-") as scratch:
        out = Path(args.out or scratch)
        runner = Runner(out, transport=args.transport, concurrency=args.concurrency, timeout_s=60,
                        call_timeout_s=1.0, show_progress=False)  # fmt: skip
        anyio.run(runner.run, cells)
        scores = score_traces([str(out / "traces")], allow_python=args.allow_python).scores
    checked, findings = check(cells, scores)
    for finding in findings:
        print(f"mcp-hazard: {finding}", file=sys.stderr)
    verdict = "all solvable, all biting" if not findings else f"{len(findings)} problem(s)"
    print(f"verify: {checked} instances ({len(cells)} episodes over {args.transport}): {verdict}")
    return EXIT_INVALID if findings else 0


def _perturb(args: argparse.Namespace) -> int:
    import yaml

    from mcp_hazard.condition import Condition
    from mcp_hazard.interventions import parse_intervention
    from mcp_hazard.scenario.load import load_scenario
    from mcp_hazard.server.episode import Episode

    loaded = load_scenario(args.path)
    task = loaded.model.tasks[0] if args.task is None else loaded.model.task(args.task)
    if task is None:
        raise UserError(f"{args.path}: no task {args.task!r}")
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
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"mcp-hazard: wrote the perturbed listing of {loaded.id}/{task.id} to {args.out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from mcp_hazard.generate import generate_command

    return generate_command(args)


def _replay(args: argparse.Namespace) -> int:
    from mcp_hazard.runner.replay import replay_script, replay_trace

    if args.trace.endswith((".yaml", ".yml")):
        return replay_script(args.trace, transport=args.transport, allow_python=args.allow_python)
    _old, new, difference = replay_trace(args.trace, transport=args.transport, scenarios=args.scenarios,
                                        allow_python=args.allow_python)  # fmt: skip
    if difference is not None:
        print(f"mcp-hazard: replay differs from {args.trace}: {difference}", file=sys.stderr)
        return EXIT_INVALID
    print(f"replay: {len(new.events)} events, identical to {args.trace} apart from times, durations and the run block")
    return 0


def _run(args: argparse.Namespace) -> int:
    from mcp_hazard.runner.command import run_command

    return run_command(args)


COMMANDS = {
    "validate": _validate,
    "serve": _serve,
    "schema": _schema,
    "hazards": _hazards,
    "score": _score,
    "run": _run,
    "verify": _verify,
    "replay": _replay,
    "perturb": _perturb,
    "generate": _generate,
}


def main(argv: Sequence[str] | None = None) -> int:
    from mcp_hazard.logs import configure_logging

    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    try:
        return COMMANDS[args.command](args)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_INVALID
    except UserError as exc:
        print(f"mcp-hazard: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `mcp-hazard hazards --json | head`: the reader left; that is not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

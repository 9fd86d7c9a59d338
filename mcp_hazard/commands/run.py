"""`mcp-hazard run`: plan the matrix, run it, score it, print the scorecard and write the reports."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hazard.commands import EXIT_FINDING, run_async
from mcp_hazard.commands.flag_values import cpus, parse_seeds, port, positive, positive_float, repeats
from mcp_hazard.commands.options import (
    allow_python,
    command_parser,
    default_concurrency,
    hazard_options,
    parse_profiles,
    scenario_paths,
)
from mcp_hazard.commands.run_folder import claimed, closing, keep_scenarios, locked
from mcp_hazard.errors import UserError
from mcp_hazard.suggest import did_you_mean
from mcp_hazard.terminal_text import visible

if TYPE_CHECKING:
    from mcp_hazard.runner.upstream_log import UpstreamLog
    from mcp_hazard.scenario.files import LoadedScenario

DEFAULT_AGENTS = ("naive", "recovering")
INTERVENTION_AGENTS = ("naive", "naive-positional", "recovering")
"""The default agents when interventions run: naive-positional shows reorder's effect (nothing else binds arguments
by position). Without interventions it makes exactly naive's calls, so the default run leaves it out."""
MAX_PROBLEM_LINES = 10


def check_program(command: str) -> None:
    """The program of an `--agent-cmd` must exist before anything runs: one line if it does not."""
    words = shlex.split(command)
    if not words:
        raise UserError("--agent-cmd is empty")
    program = words[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program)
        if not path.is_file() or not os.access(path, os.X_OK):
            problem = "is not an executable file" if path.exists() else "does not exist"
            raise UserError(f"--agent-cmd {command!r}: {program} {problem}")
    elif shutil.which(program) is None:
        raise UserError(f"--agent-cmd {command!r}: program {program!r} not found on PATH")


def _ray_settings(args: argparse.Namespace) -> Any:
    """The Ray options, refused (one line) when they would be ignored."""
    given = [flag for flag, value in (("--ray-address", args.ray_address), ("--ray-num-cpus", args.ray_num_cpus),
                                      ("--ray-env", args.ray_env)) if value]  # fmt: skip
    if args.executor != "ray":
        if given:
            raise UserError(f"{given[0]} needs --executor ray")
        return None
    from mcp_hazard.runner.ray_executor import RaySettings, check_transport

    check_transport(args.transport)
    return RaySettings(args.ray_address, args.ray_num_cpus or 1.0, tuple(args.ray_env))


def _runner_options(args: argparse.Namespace, commands: dict[str, str]) -> dict[str, Any]:
    return {
        "transport": args.transport, "concurrency": args.concurrency, "timeout_s": args.timeout,
        "call_timeout_s": args.call_timeout, "agent_cmds": commands, "show_progress": not args.no_progress,
    }  # fmt: skip


def _listening(args: argparse.Namespace) -> socket.socket | None:
    """`--port`: the run's HTTP server's socket, bound now, before the run folder is touched, so that a busy port is
    one line (exit 2) and nothing else happens; None without it (the server then takes any free port)."""
    if args.port is None:
        return None
    from mcp_hazard.server.listen import listen

    return listen("127.0.0.1", args.port, flag="--port")


def _check_port(args: argparse.Namespace) -> None:
    if args.port is None:
        return
    if args.transport != "http":
        raise UserError(f"--port is the port of the run's HTTP server, and --transport {args.transport} has none; "
                        "leave --port out, or use --transport http (the default)")  # fmt: skip
    if args.executor == "ray":
        raise UserError("--port runs with --executor local (the default): each Ray worker serves its own episode "
                        "on a free port")  # fmt: skip


def _execute(
    args: argparse.Namespace, ray: Any, out: Path, commands: dict[str, str], cells: list[Any],
    sock: socket.socket | None = None,
) -> list[Any]:  # fmt: skip
    """Run the cells with the chosen executor; both write the same run folder."""
    options = _runner_options(args, commands)
    if ray is None:
        import anyio

        from mcp_hazard.runner.matrix import agent_labels
        from mcp_hazard.runner.run import Runner  # the server and the SDK, once every option has been checked

        return anyio.run(Runner(out, labels=agent_labels(args.agent_label), sock=sock, **options).run, cells)
    from mcp_hazard.runner.ray_executor import RayExecutor

    return RayExecutor(out, ray=ray, **options).run(cells)


def run_command(args: argparse.Namespace) -> int:
    from mcp_hazard.commands.gate import gate_after_run, gating

    baseline = gating(args)  # --min/--baseline: checked before anything runs
    code = _run_command(args)
    return code if baseline is False else gate_after_run(args, baseline, code)


def _run_command(args: argparse.Namespace) -> int:
    from mcp_hazard.agentdojo.source_names import is_source
    from mcp_hazard.agentdojo.sources import load_sources

    if _proxied(args):
        return int(run_async(_run_proxied, args))
    scenarios = load_sources(args.paths, allow_python=args.allow_python)
    ray = _ray_settings(args)
    if ray is not None and any(is_source(path) for path in args.paths):
        raise UserError("--executor ray runs scenario files; run AgentDojo suites with --executor local (the default)")
    cells, out, commands, kinds = _plan(args, scenarios, ray)
    with closing(_listening(args)) as sock, claimed(out, scenarios, kinds):
        results = _execute(args, ray, out, commands, cells, sock)
        return _report(args, cells, results, kinds)


def _proxied(args: argparse.Namespace) -> bool:
    from mcp_hazard.proxy.config import is_proxy_file

    flags = any(getattr(args, name, None) for name in ("upstream_cmd", "upstream_url", "replay"))
    return flags or any(Path(path).is_file() and is_proxy_file(path) for path in args.paths)


async def _run_proxied(args: argparse.Namespace) -> int:
    """A matrix in front of a real server: one proxy file (its tasks), the server reached once to read its tools,
    then every episode through its own connection (or the cassette)."""
    from mcp_hazard.proxy.config import is_proxy_file, load_proxy_file
    from mcp_hazard.proxy.service import ProxyService, upstream_source
    from mcp_hazard.runner.matrix import agent_labels
    from mcp_hazard.runner.run import Runner
    from mcp_hazard.runner.upstream_log import UPSTREAM_LOG, UpstreamLog
    from mcp_hazard.scoring.run_plan import record_plan

    if args.executor == "ray":
        raise UserError("--executor ray runs scenarios; a run through a proxy runs in this process (--executor local)")
    _ray_settings(args)
    files = [path for path in args.paths if Path(path).is_file() and is_proxy_file(path)]
    if len(files) != 1 or len(args.paths) != 1:
        raise UserError("a run through a proxy takes exactly one path: the proxy file, whose tasks it runs")
    file = load_proxy_file(files[0])
    if not file.model.tasks:
        raise UserError(f"{files[0]}: the proxy file has no tasks; a run needs tasks (prompt, expected answer)")
    # The server's stderr goes to the run folder's log from its first start, so the folder is taken first.
    log = Path(args.out) / UPSTREAM_LOG
    source = upstream_source(file, args.upstream_cmd, args.upstream_url, args.replay, timeout=args.upstream_timeout,
                             allow_command=args.allow_upstream_command, stderr_log=str(log))  # fmt: skip
    service = ProxyService(source=source, file=file, record=args.record)
    with locked(Path(args.out)):
        kept = UpstreamLog(log) if source.argv else None
        async with service.running():
            env = await service.discover()
            cells, out, commands, kinds = _plan(args, [env.scenario], None)
            with closing(_listening(args)) as sock:
                keep_scenarios([env.scenario], out)
                record_plan(out, kinds)
                runner = Runner(out, proxy=service, labels=agent_labels(args.agent_label), sock=sock,
                                **_runner_options(args, commands))  # fmt: skip
                results = await runner.run(cells)
                return _report(args, cells, results, kinds, kept)


def _plan(
    args: argparse.Namespace, loaded: list[LoadedScenario], ray: Any
) -> tuple[list[Any], Path, dict[str, str], list[dict[str, Any]]]:
    """The cells of the matrix, every option checked first (one line each), and what the plan does with each hazard
    kind per task; both the scenarios and that plan are kept in the run folder (the report reads the plan)."""
    from mcp_hazard.agents import BUILT_IN, RUNNABLE
    from mcp_hazard.runner.external import agent_name
    from mcp_hazard.runner.matrix import agent_labels, kinds_planned, plan, select_tasks

    scenarios, tasks = select_tasks(loaded, args.scenario or [], args.task or [])
    defaults = INTERVENTION_AGENTS if args.intervention else DEFAULT_AGENTS
    agents = list(args.agent) if args.agent else ([] if args.agent_cmd else list(defaults))
    for name in agents:
        if name not in BUILT_IN or name == "replay":
            known = RUNNABLE.split(", ")
            raise UserError(f"--agent {name!r}: no such built-in agent{did_you_mean(name, known)}; built-in agents "
                            f"are {RUNNABLE} (your own program: --agent-cmd 'CMD ...')")  # fmt: skip
    scripted = [name for name in agents if name != "llm"]
    for scenario in scenarios if scripted else []:
        blind = [t.id for t in scenario.model.tasks if not t.golden_path.steps
                 and (tasks is None or (scenario.id, t.id) in tasks)]  # fmt: skip
        if blind:
            raise UserError(
                f"--agent {scripted[0]} follows a task's golden path, and task {blind[0]!r} has none; give it a "
                "golden_path in the proxy file, or run only --agent llm / --agent-cmd"
            )
    _check_port(args)
    commands = {agent_name(command): command for command in args.agent_cmd}
    if args.concurrency is None:
        args.concurrency = default_concurrency(args.transport, agents, bool(commands), _proxied(args))
    if args.transport == "memory" and commands:
        raise UserError("--agent-cmd needs --transport stdio or http: an external program cannot reach memory")
    for command in commands.values():
        if ray is None or not (ray.address or os.environ.get("RAY_ADDRESS")):  # else it runs on other machines
            check_program(command)
    if "llm" in agents:
        from mcp_hazard.agents.llm import LlmAgent, check_endpoint

        # Bad settings, an unreachable endpoint or a refused key fail here, in one line, before any episode runs.
        check_endpoint(LlmAgent().config)
    from mcp_hazard.interventions.by_name import parse_composition

    interventions = [parse_composition(text) for text in args.intervention or []]
    hazards = hazard_options(args.hazard if args.hazard is not None or not interventions else ["declared"])
    profiles = parse_profiles(args.profile)
    labels = agent_labels(args.agent_label, [*agents, *commands])
    if ray is not None and (labels or args.repeats > 1):
        raise UserError("--agent-label and --repeats run with --executor local (the default), not ray")
    cells = plan(scenarios, [*agents, *commands], hazards, profiles, args.seeds, interventions, tasks, args.repeats)
    if not cells:
        raise UserError("nothing to run: the selected scenarios have no tasks")
    kinds = kinds_planned(scenarios, hazards, tasks)
    return cells, Path(args.out), commands, kinds


def _report(
    args: argparse.Namespace, cells: list[Any], results: list[Any], kinds: list[dict[str, Any]],
    upstream: UpstreamLog | None = None,
) -> int:  # fmt: skip
    from mcp_hazard.scoring.aggregate import aggregate
    from mcp_hazard.scoring.collect import score_traces
    from mcp_hazard.scoring.report import render
    from mcp_hazard.trace.storage import write_file

    out = Path(args.out)
    statuses = Counter(r.status for r in results)
    # Every episode of the matrix is scored, crashed ones too: a crash is an outcome (docs/agents.md).
    scored = score_traces([str(out / "traces")], allow_python=args.allow_python, timelines=True)
    mine = {cell.episode_id for cell in cells}
    scores = [s for s in scored.scores if s.episode_id in mine]
    unscorable = [u for u in scored.unscorable if u.get("episode_id") in mine]
    report = aggregate(scores, scored.warnings, unscorable, scored.scenarios, kinds,  # this run's plan alone
                       suite_parts=scored.suite_parts)  # fmt: skip
    for fmt, name in (("json", "report.json"), ("markdown", "report.md"), ("html", "report.html")):
        write_file(out / name, render(report, fmt, timelines=scored.timelines).encode("utf-8", "backslashreplace"))
    print(render(report, "table", verbose=args.verbose))
    servers = f", {statuses['server_crashed']} server crashes" if statuses["server_crashed"] else ""
    print(
        f"{len(results)} episodes: {statuses['done']} run, {statuses['skipped']} already done, "
        f"{statuses['timeout']} timed out, {statuses['crashed']} crashed, {statuses['endpoint_error']} endpoint "
        f"errors{servers}; traces in {out / 'traces'}"
    )
    more = "" if args.verbose else "; --verbose: every table here"
    print(f"Full report: {out / 'report.html'} (in a browser), report.md, report.json{more}")
    if upstream is not None:
        upstream.summary(args.verbose)
    troubled = [r for r in results if r.status in ("timeout", "crashed", "endpoint_error", "server_crashed")]
    for result in troubled[:MAX_PROBLEM_LINES]:
        note = visible(result.note or "", one_line=True)  # an agent's or a model server's words
        print(f"mcp-hazard: {result.status}: {result.cell.episode_id}: {note}", file=sys.stderr)
    if len(troubled) > MAX_PROBLEM_LINES:
        print(f"mcp-hazard: ... and {len(troubled) - MAX_PROBLEM_LINES} more in {out / 'run.jsonl'}", file=sys.stderr)
    if statuses["endpoint_error"]:
        print(
            f"mcp-hazard: {statuses['endpoint_error']} episode(s) ended on a failed model endpoint and count as "
            "failures in this scorecard; run the same command again to retry just those",
            file=sys.stderr,
        )
    if statuses["server_crashed"]:
        print(
            f"mcp-hazard: {statuses['server_crashed']} episode(s) ended when their server crashed; they are left out "
            "of every success rate (not the agent's doing); run the same command again to retry just those",
            file=sys.stderr,
        )
    return EXIT_FINDING if statuses["endpoint_error"] or statuses["server_crashed"] else 0


HELP = "run agents over a matrix of conditions and print the scorecard"
EXAMPLES = [
    ("mcp-hazard run scenarios/", "the main job: two reference agents, clean and under every hazard"),
    (
        "mcp-hazard run scenarios/ --agent recovering --seeds 0-4 --hazard transient_error",
        "one agent, one hazard, five seeds",
    ),
    (
        "mcp-hazard run scenarios/travel.yaml --intervention all --transport memory",
        "every interface intervention, in process",
    ),
    (
        "mcp-hazard run scenarios/ --agent-cmd 'python my_agent.py' --transport stdio",
        "your own agent program (docs/agents.md)",
    ),
    (
        "mcp-hazard run proxies/time.yaml --allow-upstream-command --record time.cassette.jsonl",
        "a matrix against a real MCP server, its replies recorded (docs/proxy.md)",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    from mcp_hazard.commands.gate import add_gate_options

    parser = command_parser(commands, "run", HELP, EXAMPLES)
    _matrix_options(parser)
    _execution_options(parser)
    allow_python(parser)
    _proxy_options(parser)
    add_gate_options(parser)  # `run --min/--baseline` gates its own run folder once it is scored
    parser.set_defaults(handler=run_command)
    return parser


def _matrix_options(run: argparse.ArgumentParser) -> None:
    """What the matrix holds: scenarios and tasks, agents, seeds, conditions."""
    scenario_paths(run)
    run.add_argument("--scenario", action="append", default=None, metavar="ID",
                     help="run only this scenario (repeatable; default: every scenario under PATHS)")  # fmt: skip
    run.add_argument("--task", action="append", default=None, metavar="ID",
                     help="run only this task, ID or SCENARIO/ID (repeatable; default: every task)")  # fmt: skip
    run.add_argument("--agent", action="append", default=None,
                     help="built-in agent: naive, naive-positional, recovering, golden, obedient, llm "
                          "(repeatable; default: naive and recovering, and naive-positional when an intervention "
                          "runs)")  # fmt: skip
    run.add_argument("--agent-label", action="append", default=None, metavar="AGENT=GROUP",
                     help="put an agent in a group for the report's group table, e.g. llm=contaminated "
                          "(repeatable)")  # fmt: skip
    run.add_argument("--repeats", type=repeats, default=1, metavar="K",
                     help="attempts per cell with the same seed and condition (default 1); the report gives "
                          "best-of-k and pass^k over them")  # fmt: skip
    run.add_argument("--agent-cmd", action="append", default=[], metavar="'CMD ...'",
                     help="an external agent program (repeatable); see docs/agents.md")  # fmt: skip
    run.add_argument("--seeds", type=parse_seeds, default=[0], help="seeds, e.g. 1-5 or 1,3 (default 0)")
    run.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                     help="a hazard condition (repeatable; default all: each applicable kind alone)")  # fmt: skip
    run.add_argument("--profile", default="strict",
                     help="comma-separated profiles: strict, guided, guarded (default strict)")  # fmt: skip
    run.add_argument("--intervention", action="append", default=None, metavar="NAME",
                     help="an intervention condition (repeatable): a name, names joined with '+' to compose them "
                          "in order (replace+reorder), or 'all' = each alone; default none")  # fmt: skip


def _execution_options(run: argparse.ArgumentParser) -> None:
    """How and where the episodes run, and what the run prints and writes."""
    run.add_argument("--transport", choices=["memory", "stdio", "http"], default="http",
                     help="how agents reach the server (default http: one real server on 127.0.0.1)")  # fmt: skip
    run.add_argument("--port", type=port, default=None, metavar="N",
                     help="--transport http: the port of the run's server on 127.0.0.1 (default: any free one); a "
                          "busy port stops the run before it starts")  # fmt: skip
    run.add_argument("--concurrency", type=positive, default=None, metavar="N",
                     help="episodes at once (default 16 for built-in agents over memory or http; 4 with stdio, "
                          "--agent-cmd, --agent llm or a proxy file)")  # fmt: skip
    run.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="where episodes run: local (this process, default) or ray (one Ray task per episode; "
                          "needs the [ray] extra, see docs/scale-out.md)")  # fmt: skip
    run.add_argument("--ray-address", metavar="ADDR",
                     help="the Ray cluster to join (default: RAY_ADDRESS, else a local Ray instance "
                          "for this run)")  # fmt: skip
    run.add_argument("--ray-num-cpus", type=cpus, default=None, metavar="N",
                     help="CPUs Ray reserves per episode, fractions allowed (default 1; LLM agents "
                          "mostly wait)")  # fmt: skip
    run.add_argument("--ray-env", action="append", default=[], metavar="NAME",
                     help="pass this environment variable to the Ray workers too (repeatable; "
                          "MCP_HAZARD_* always)")  # fmt: skip
    run.add_argument("--timeout", type=positive_float, default=60.0, help="seconds per episode (default 60)")
    run.add_argument("--call-timeout", type=positive_float, default=2.0,
                     help="seconds a reference agent waits for one tool call (default 2)")  # fmt: skip
    run.add_argument("--out", default="runs/matrix", help="run folder: traces, run log, reports (default runs/matrix)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--verbose", action="store_true", help="print every table, not just the scorecard")


def _proxy_options(run: argparse.ArgumentParser) -> None:
    """A matrix in front of a real server (PATHS: one proxy file), as `proxy` takes them."""
    run.add_argument("--upstream-cmd", metavar="'CMD ...'", help="proxy: the real server's command line (PATHS: a "
                     "proxy file)")  # fmt: skip
    run.add_argument("--upstream-url", metavar="URL", help="proxy: the real server's Streamable HTTP endpoint")
    run.add_argument("--record", metavar="CASSETTE", help="proxy: also store the server's replies in this cassette")
    run.add_argument("--replay", metavar="CASSETTE", help="proxy: serve the replies in this cassette, no server")
    run.add_argument("--allow-upstream-command", action="store_true", help="proxy: run the server command the proxy "
                     "file names (upstream.command)")  # fmt: skip
    run.add_argument("--upstream-timeout", type=positive_float, metavar="SECONDS", help="proxy: seconds to wait for "
                     "each answer of the server (default: the file's upstream.timeout, else 60)")  # fmt: skip

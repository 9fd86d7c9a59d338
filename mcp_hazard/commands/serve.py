"""`serve`: one episode over stdio, or many over Streamable HTTP."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mcp_hazard.commands import EXIT_USAGE
from mcp_hazard.commands.flag_values import host_port, seed, ttl
from mcp_hazard.commands.options import (
    allow_python,
    command_parser,
    condition_options,
    hazard_options,
    http_access_options,
    trace_options,
)
from mcp_hazard.errors import UserError


def serve(args: argparse.Namespace) -> int:
    import anyio

    from mcp_hazard.agentdojo.sources import load_sources
    from mcp_hazard.condition import Condition
    from mcp_hazard.hazards.fit import check_fit_in_task
    from mcp_hazard.server.heap import freeze_start_up
    from mcp_hazard.trace.storage import check_writable

    scenarios = load_sources([args.path], allow_python=args.allow_python)
    trace_dir = Path(args.trace_dir)
    check_writable(trace_dir, "the trace folder")  # a server that could record nothing stops here, in one line
    keep_built(scenarios, trace_dir)
    if args.http:
        _refuse_episode_flags(args)
        from mcp_hazard.commands.http_access import announce, choose_token, needs, run_server, shown_url
        from mcp_hazard.server.episodes import EpisodeRegistry
        from mcp_hazard.server.http import build_http_app
        from mcp_hazard.server.listen import listen

        host, port = args.http
        token, generated = choose_token(args)
        sock = listen(host, port)  # before any "serving" line: a busy port is one error line, exit 2
        base_url = shown_url(host, sock.getsockname()[1])
        registry = EpisodeRegistry(
            scenarios, trace_dir, transport="http", allow_python=args.allow_python, ttl=args.episode_ttl
        )
        app = build_http_app(registry, host=host, token=token)
        print(f"mcp-hazard: serving {len(scenarios)} scenario(s) on {base_url}; GET / lists the routes, "
              f"POST /episodes creates an episode{needs(token)}", file=sys.stderr)  # fmt: skip
        announce(token, generated, base_url)
        freeze_start_up()
        run_server(app, args, sock)
        return 0
    if args.scenario is None and len(scenarios) > 1:
        raise UserError(f"{args.path} holds {len(scenarios)} scenarios; pick one with --scenario")
    from mcp_hazard.interventions import parse_intervention

    interventions = [parse_intervention(name) for name in args.intervention]
    if "all" in interventions:
        raise UserError("--intervention all is for `run` (one condition per intervention); name them for serve")
    condition = Condition(
        seed=args.seed or 0, profile=args.profile or "strict", hazards=hazard_options(args.hazard),
        interventions=interventions,
    )  # fmt: skip
    chosen = [s for s in scenarios if args.scenario in (None, s.id)]
    if chosen:  # else the registry says which scenarios there are
        check_fit_in_task(condition.hazards, chosen[0].model, args.task)
    from mcp_hazard.server.episodes import EpisodeRegistry  # the SDK, once the options are known to be good
    from mcp_hazard.server.stdio import serve_stdio

    registry = EpisodeRegistry(scenarios, trace_dir, transport="stdio", allow_python=args.allow_python,
                               runner=args.runner)  # fmt: skip
    episode = registry.create(args.scenario, args.task, condition, args.episode_id, args.agent)
    freeze_start_up()
    anyio.run(serve_stdio, episode)
    return EXIT_USAGE if episode.trace.failure is not None else 0  # its trace is cut short: said once, on stderr


def keep_built(scenarios: list[Any], trace_dir: Path) -> None:
    """A scenario that is not a file (an AgentDojo suite) is kept beside its traces (`TRACE_DIR/scenarios/`), so
    `score TRACE_DIR` finds it by its hash, as it finds a run folder's copies."""
    from mcp_hazard.scenario.files import LoadedScenario

    built = [scenario for scenario in scenarios if type(scenario).source_bytes is not LoadedScenario.source_bytes]
    if built:
        from mcp_hazard.commands.run_folder import keep_scenarios

        keep_scenarios(built, trace_dir)


EPISODE_FLAGS = ("scenario", "task", "seed", "episode_id", "agent", "hazard", "profile", "intervention")


def _refuse_episode_flags(args: argparse.Namespace) -> None:
    """Over HTTP every episode names its own scenario, task and condition (POST /episodes, or the query string of
    its URL): a flag for the one stdio episode would be dropped without a word, so it is refused."""
    given = [name for name in EPISODE_FLAGS if getattr(args, name, None) not in (None, [])]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UserError(f"{flag} is for the one episode of `serve` over stdio; over HTTP each episode names its own "
                        "(POST /episodes, or the query string of its URL: docs/http-api.md)")  # fmt: skip


HELP = "serve episodes over stdio (one) or Streamable HTTP (many)"
EXAMPLES = [
    (
        "mcp-hazard serve scenarios/travel.yaml --task cheapest-trip --seed 7 --trace-dir runs/",
        "one episode over stdio, as a desktop assistant starts it",
    ),
    (
        "mcp-hazard serve scenarios/travel.yaml --hazard transient_error --profile guided",
        "the same with a hazard and guided error messages",
    ),
    (
        "mcp-hazard serve scenarios/ --http 127.0.0.1:8765 --trace-dir runs/",
        "many episodes over Streamable HTTP (routes: docs/http-api.md)",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "serve", HELP, EXAMPLES)
    parser.add_argument("path", help="a scenario file, or a directory of them")
    parser.add_argument("--scenario", help="scenario id, when PATH holds several (stdio)")
    parser.add_argument("--task", help="task id (stdio; default: the scenario's first task)")
    parser.add_argument("--seed", type=seed, default=None, help="seed of the condition (stdio; default 0)")
    trace_options(parser)
    condition_options(parser)
    parser.set_defaults(profile=None)  # strict, for the stdio episode; over HTTP each episode names its own
    parser.add_argument("--http", type=host_port, metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    allow_python(parser)
    http_access_options(parser)
    parser.add_argument("--episode-ttl", type=ttl, default=600.0, metavar="SECONDS",
                        help="HTTP: release an episode idle this long (ended ones after min(TTL, 60 s)); "
                        "traces stay on disk (default 600)")  # fmt: skip
    parser.set_defaults(handler=serve)
    return parser

"""`serve`: one episode over stdio, or many over Streamable HTTP."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from mcp_hazard.commands import hazard_options
from mcp_hazard.errors import UserError


def serve(args: argparse.Namespace) -> int:
    from mcp_hazard.condition import Condition
    from mcp_hazard.hazards.fit import check_fit_in_task
    from mcp_hazard.load import load_scenarios
    from mcp_hazard.server.heap import freeze_start_up

    scenarios = load_scenarios([args.path], allow_python=args.allow_python)
    trace_dir = Path(args.trace_dir)
    if args.http:
        _refuse_episode_flags(args)
        import uvicorn

        from mcp_hazard.logs import log
        from mcp_hazard.server.access import token_from_env
        from mcp_hazard.server.episodes import EpisodeRegistry
        from mcp_hazard.server.http import LOOPBACK, build_http_app
        from mcp_hazard.server.listen import listen

        host, port = args.http
        sock = listen(host, port)  # before any "serving" line: a busy port is one error line, exit 2
        port = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        token = token_from_env(args.token)
        if host not in LOOPBACK and token is None:
            log.warning("serving beyond loopback without --token: anyone who reaches this address can run episodes",
                        host=host)  # fmt: skip
        registry = EpisodeRegistry(
            scenarios, trace_dir, transport="http", allow_python=args.allow_python, ttl=args.episode_ttl
        )
        needs = "; requests need 'Authorization: Bearer <token>'" if token else ""
        app = build_http_app(registry, host=host, token=token)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        print(f"mcp-hazard: serving {len(scenarios)} scenario(s) on http://{shown}:{port}; "
              f"GET / lists the routes, POST /episodes creates an episode{needs}", file=sys.stderr)  # fmt: skip
        freeze_start_up()
        server.run(sockets=[sock])
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

    registry = EpisodeRegistry(scenarios, trace_dir, transport="stdio", allow_python=args.allow_python)
    episode = registry.create(args.scenario, args.task, condition, args.episode_id, args.agent)
    freeze_start_up()
    anyio.run(serve_stdio, episode)
    return 0


EPISODE_FLAGS = ("scenario", "task", "seed", "episode_id", "agent", "hazard", "profile", "intervention")


def _refuse_episode_flags(args: argparse.Namespace) -> None:
    """Over HTTP every episode names its own scenario, task and condition (POST /episodes, or the query string of
    its URL): a flag for the one stdio episode would be dropped without a word, so it is refused."""
    given = [name for name in EPISODE_FLAGS if getattr(args, name, None) not in (None, [])]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UserError(f"{flag} is for the one episode of `serve` over stdio; over HTTP each episode names its own "
                        "(POST /episodes, or the query string of its URL: docs/http-api.md)")  # fmt: skip

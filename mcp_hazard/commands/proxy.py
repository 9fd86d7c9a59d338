"""`proxy`: hazards and interventions in front of a real MCP server, over stdio (one episode) or HTTP (many)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hazard.commands import run_async
from mcp_hazard.commands.flag_values import host_port, positive_float, seed, ttl
from mcp_hazard.commands.options import (
    command_parser,
    condition_options,
    hazard_options,
    http_access_options,
    trace_options,
)
from mcp_hazard.errors import UserError
from mcp_hazard.terminal_text import visible

if TYPE_CHECKING:
    from mcp_hazard.condition import Condition
    from mcp_hazard.proxy.config import LoadedProxyFile
    from mcp_hazard.proxy.service import ProxyService


def proxy(args: argparse.Namespace) -> int:
    from mcp_hazard.proxy.config import load_proxy_file
    from mcp_hazard.proxy.service import ProxyService, upstream_source

    file = load_proxy_file(args.path) if args.path else None
    source = upstream_source(file, args.upstream_cmd, args.upstream_url, args.replay, timeout=args.upstream_timeout,
                             allow_command=args.allow_upstream_command, stderr_log=args.upstream_log)  # fmt: skip
    if args.upstream_log is not None and not source.argv:
        raise UserError("--upstream-log keeps the stderr of a server the proxy starts; a server reached by "
                        "--upstream-url or a --replay cassette has none here")  # fmt: skip
    service = ProxyService(source=source, file=file, record=args.record, runner=args.runner)
    condition = _condition(args, file)
    trace_dir = Path(args.trace_dir)
    if args.http:
        return _serve_http(args, service, condition, trace_dir)
    from mcp_hazard.server.heap import freeze_start_up

    freeze_start_up()
    if source.argv and args.record is None and not args.sdk:
        from mcp_hazard.proxy.relay import serve_relay

        run_async(serve_relay, service, trace_dir, args.task, condition, args.episode_id, args.agent)
        return 0
    run_async(_serve_stdio, args, service, condition, trace_dir)
    return 0


def _condition(args: argparse.Namespace, file: LoadedProxyFile | None) -> Condition:
    """The command line's condition; where it says nothing, the proxy file's."""
    from mcp_hazard.condition import Condition
    from mcp_hazard.interventions import parse_intervention

    base = (file.model.condition if file is not None else None) or Condition()
    interventions = [parse_intervention(name) for name in args.intervention]
    if "all" in interventions:
        raise UserError("--intervention all is for `run` (one condition per intervention); name them for proxy")
    return Condition(
        seed=args.seed if args.seed is not None else base.seed,
        profile=args.profile or base.profile,
        hazards=hazard_options(args.hazard) if args.hazard else list(base.hazards),
        interventions=interventions or list(base.interventions),
    )


async def _serve_stdio(args: argparse.Namespace, service: ProxyService, condition: Condition, trace_dir: Path) -> None:
    from mcp_hazard.hazards.fit import check_fit_in_task
    from mcp_hazard.proxy.app import build_proxy_server
    from mcp_hazard.proxy.proxied_episode import ProxyEpisode
    from mcp_hazard.server.episodes import EpisodeRegistry
    from mcp_hazard.server.stdio import serve_stdio

    async with service.running():
        env = await service.discover(keep=True)
        check_fit_in_task(condition.hazards, env.scenario.model, args.task)
        registry = EpisodeRegistry([env.scenario], trace_dir, transport="stdio", make_episode=service.make_episode,
                                   runner=service.runner)  # fmt: skip
        episode = registry.create(env.scenario.id, args.task, condition, args.episode_id, args.agent)
        assert isinstance(episode, ProxyEpisode)
        server = build_proxy_server(lambda ctx: episode, env.info, with_task=episode.takes_answer)
        await serve_stdio(episode, server)


def _serve_http(args: argparse.Namespace, service: ProxyService, condition: Condition, trace_dir: Path) -> int:
    from mcp_hazard.commands.http_access import announce, choose_token, needs, run_server, shown_url
    from mcp_hazard.hazards.fit import check_fits
    from mcp_hazard.proxy.app import build_proxy_server
    from mcp_hazard.server.episodes import EpisodeRegistry
    from mcp_hazard.server.heap import freeze_start_up
    from mcp_hazard.server.http import build_http_app
    from mcp_hazard.server.listen import listen

    token, generated = choose_token(args)

    async def discover() -> None:
        async with service.running():
            await service.discover()

    run_async(discover)
    env = service.env
    assert env is not None
    # The default condition of every episode: a named kind must fit some task (a request may name its own).
    check_fits(condition.hazards, [(env.scenario.model, task) for task in env.scenario.model.tasks])
    host, port = args.http
    sock = listen(host, port)  # a busy port is one error line, exit 2, before any "proxying" line
    base_url = shown_url(host, sock.getsockname()[1])
    registry = EpisodeRegistry(
        [env.scenario],
        trace_dir,
        transport="http",
        ttl=args.episode_ttl,
        make_episode=service.make_episode,
        default_condition=condition,
    )
    app = build_http_app(
        registry, host=host, token=token,
        build=lambda resolve: build_proxy_server(resolve, env.info, with_task=service.with_task),
        around=service.running,
    )  # fmt: skip
    upstream = visible(f"{env.info.name} {env.info.version}", one_line=True)  # as the server names itself
    print(f"mcp-hazard: proxying {upstream} ({service.source.label()}) on "
          f"{base_url}; create an episode with POST /episodes{needs(token)}", file=sys.stderr)  # fmt: skip
    announce(token, generated, base_url)
    freeze_start_up()
    run_server(app, args, sock)
    return 0


HELP = "put hazards in front of a real MCP server (stdio or HTTP)"
EXAMPLES = [
    (
        "mcp-hazard proxy --upstream-cmd 'python -m mcp_server_time' --hazard transient_error",
        "hazards in front of a real server, over stdio, no file needed",
    ),
    (
        "mcp-hazard proxy proxies/time.yaml --allow-upstream-command --http 127.0.0.1:8766 --trace-dir runs/",
        "many episodes over HTTP, with the proxy file's notes and tasks",
    ),
    (
        "mcp-hazard proxy proxies/time.yaml --replay time.cassette.jsonl",
        "serve recorded replies without the server (docs/proxy.md)",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "proxy", HELP, EXAMPLES)
    parser.add_argument(
        "path", nargs="?", help="a proxy file: what hazards need to know about the server's tools, tasks"
    )
    parser.add_argument("--upstream-cmd", metavar="'CMD ...'", help="the real server's command line (it speaks stdio)")
    parser.add_argument("--upstream-url", metavar="URL", help="the real server's Streamable HTTP endpoint")
    parser.add_argument("--record", metavar="CASSETTE", help="also store the server's replies in this JSONL cassette")
    parser.add_argument("--replay", metavar="CASSETTE", help="serve the replies in this cassette, without the server")
    parser.add_argument("--allow-upstream-command", action="store_true", help="run the server command the proxy file "
                        "names (upstream.command); --upstream-cmd needs no flag")  # fmt: skip
    parser.add_argument("--upstream-timeout", type=positive_float, metavar="SECONDS", help="seconds to wait for each "
                        "answer of the server (default: the file's upstream.timeout, else 60)")  # fmt: skip
    parser.add_argument("--upstream-log", metavar="FILE", help="append the server's stderr to FILE instead of "
                        "passing it through to the proxy's stderr")  # fmt: skip
    parser.add_argument("--task", help="task id from the proxy file (default: its first; none: an open episode)")
    parser.add_argument("--seed", type=seed, default=None, help="seed of the condition (default: the file's, else 0)")
    trace_options(parser)
    condition_options(parser)
    parser.set_defaults(profile=None)  # the proxy file's, else strict
    parser.add_argument("--http", type=host_port, metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    http_access_options(parser)
    parser.add_argument("--episode-ttl", type=ttl, default=600.0, metavar="SECONDS",
                        help="HTTP: release an episode idle this long (default 600)")  # fmt: skip
    parser.add_argument("--sdk", action="store_true", help="stdio in front of a stdio server: go through the SDK on "
                        "both sides instead of relaying frames (slower, the same trace)")  # fmt: skip
    parser.set_defaults(handler=proxy)
    return parser

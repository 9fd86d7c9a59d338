"""Open an episode over a real transport and hand back a connected SDK client plus the trace path.

memory: the server runs in this process (fastest, for tests and benches).
stdio:  `mcp-hazard serve` runs as a subprocess, exactly as a desktop assistant would start it.
http:   one uvicorn server on 127.0.0.1 (a free port) serves every episode of the run at its own URL. Its control
        token is drawn here and known only to this process: an agent (an external one has an HTTP client) is handed
        its episode's mcp_url, which reaches that episode alone.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import httpx
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.server.connections import Limits, Server, http_server
from mcp_hazard.server.episodes import EpisodeRegistry, new_episode_id
from mcp_hazard.server.http import build_http_app
from mcp_hazard.server.listen import listen
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.server.stdio import single_episode_server
from mcp_hazard.trace.storage import check_writable

if TYPE_CHECKING:
    from mcp_hazard.proxy.service import ProxyService

Transport = Literal["memory", "stdio", "http"]
SHUTDOWN_GRACE_S = 1
"""How long a run's HTTP server waits for calls still under way when the run stops early (a hazard's delay may be
far longer); they are cancelled after that."""


def episode_maker(proxy: ProxyService | None) -> dict[str, Any]:
    """Registry options: a proxy's episodes forward calls to its server."""
    return {} if proxy is None else {"make_episode": proxy.make_episode}


def proxy_server(proxy: ProxyService, resolve: Any) -> Any:
    from mcp_hazard.proxy.app import build_proxy_server

    assert proxy.env is not None
    return build_proxy_server(resolve, proxy.env.info, with_task=proxy.with_task)


TRANSPORTS: tuple[Transport, ...] = ("memory", "stdio", "http")


def mcp_http_client() -> Any:
    """An HTTP client for MCP clients, with the SDK's own timeouts (its helper is private, so it is used only when
    it is there)."""
    try:
        from mcp.shared._httpx_utils import create_mcp_http_client
    except ImportError:
        import httpx2

        return httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0))
    return create_mcp_http_client()


@dataclass
class Connected:
    client: Client
    trace_path: Path
    episode_id: str
    episode: Episode | None = None  # the episode itself when it runs in this process (memory, http)


def serve_command(
    scenario: LoadedScenario,
    task: str,
    condition: Condition,
    trace_dir: Path,
    episode_id: str,
    agent: str | None = None,
    proxy: ProxyService | None = None,
    *,
    runner: bool = False,
) -> list[str]:
    """The stdio command line for one episode (also what a desktop assistant's config would hold): `serve`, or
    `proxy` for a real server's tools. `runner`: the caller ends the trace with `agent_ended` (`--runner`)."""
    served = ["serve", scenario.path] if proxy is None else ["proxy", *([scenario.path] if scenario.path else []),
                                                                *proxy.upstream_args()]  # fmt: skip
    command = [
        sys.executable, "-m", "mcp_hazard", *served,
        "--task", task, "--seed", str(condition.seed), "--trace-dir", str(trace_dir), "--episode-id", episode_id,
        "--profile", condition.profile,
    ]  # fmt: skip
    if agent is not None:
        command += ["--agent", agent]
    if runner:
        command += ["--runner"]
    for name in condition.interventions:
        command += ["--intervention", name]
    for hazard in condition.hazards:
        text = hazard if isinstance(hazard, str) else hazard.model_dump_json(exclude_unset=True)
        command += ["--hazard", text]
    return command


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago, to hand to another process (which must cope with losing it);
    this process binds its own servers with `listen(..., 0)` instead."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpHost:
    """A uvicorn server on 127.0.0.1 running inside the caller's event loop, for the span of a `with` block.

    It serves on `sock` when given (`run --port`, bound before the run starts so that a busy port is one line),
    else on a free port it binds itself: binding first, rather than picking a port and letting uvicorn bind it,
    leaves no moment in which another program could take the port. uvicorn's own signal handlers are not
    installed: the caller decides what a signal does (runner/run.py)."""

    def __init__(
        self, registry: EpisodeRegistry, proxy: ProxyService | None = None, sock: socket.socket | None = None
    ) -> None:
        self.registry = registry
        self.proxy = proxy
        self.sock = sock
        self.port = 0
        self.token = secrets.token_urlsafe(24)
        self._server: Server | None = None
        # One HTTP client for the REST routes and one for the episodes' MCP clients, shared by every episode of the
        # run: making an HTTP client builds a TLS context, about 70 ms of CPU, more than a whole episode costs.
        self.http: httpx.AsyncClient | None = None
        self.mcp_http: Any = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth(self) -> dict[str, str]:
        """The header of the control routes' requests."""
        return {"Authorization": f"Bearer {self.token}"}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[HttpHost]:
        sock = self.sock if self.sock is not None else listen("127.0.0.1", 0)
        self.port = int(sock.getsockname()[1])
        app = build_http_app(self.registry, token=self.token)
        if self.proxy is not None:  # its connections live in the runner's ProxyService, already running
            proxy = self.proxy
            app = build_http_app(self.registry, token=self.token, build=lambda resolve: proxy_server(proxy, resolve))
        self._server = http_server(app, Limits(), lifespan="on", signals=False)
        async with AsyncExitStack() as clients, anyio.create_task_group() as group:
            clients.callback(sock.close)
            self.http = await clients.enter_async_context(httpx.AsyncClient(headers=self.auth))
            self.mcp_http = await clients.enter_async_context(mcp_http_client())
            group.start_soon(self._serve, sock)
            with anyio.fail_after(20):
                while not self._server.started:
                    await anyio.sleep(0.01)
            try:
                yield self
            except BaseException:  # cancelled (a run stopped by a signal) or failed: in-flight calls are abandoned
                self._server.config.timeout_graceful_shutdown = SHUTDOWN_GRACE_S
                raise
            finally:
                self._server.should_exit = True

    async def _serve(self, sock: socket.socket) -> None:
        """Serve until told to stop; shielded, so that a cancelled run still shuts the server down in order (its
        lifespan ends every open episode) instead of abandoning it mid-request."""
        assert self._server is not None
        with anyio.CancelScope(shield=True):
            await self._server.serve(sockets=[sock])

    async def create_episode(
        self, scenario: str, task: str, condition: Condition, agent: str | None = None, episode_id: str | None = None
    ) -> dict[str, Any]:
        payload = {
            "scenario": scenario, "task": task, "agent": agent, "episode_id": episode_id,
            **condition.model_dump(mode="json"),
        }  # fmt: skip
        if self.http is None:
            raise RuntimeError("the HTTP host is not running")
        response = await self.http.post(f"{self.base_url}/episodes", json=payload)
        if response.status_code == 507:  # the trace folder took no probe: the run's disk, which stops the run
            check_writable(self.registry.trace_dir, "the trace folder")
        if response.status_code == 400:  # a condition no one checked before: a replayed trace's, as recorded
            raise UserError(str(response.json().get("error") or response.text))
        response.raise_for_status()
        return dict(response.json())


@asynccontextmanager
async def open_episode(
    transport: Transport,
    scenario: LoadedScenario,
    task: str,
    condition: Condition,
    trace_dir: Path,
    *,
    mode: str = "auto",
    http_host: HttpHost | None = None,
    agent: str | None = None,
    episode_id: str | None = None,
    proxy: ProxyService | None = None,
    runner: bool = False,
) -> AsyncIterator[Connected]:
    """Start an episode over `transport` and yield a connected client; the episode ends when the block exits.
    `runner`: the caller ends the trace with `agent_ended` (over HTTP, the host's registry says so)."""
    if transport == "memory":
        registry = EpisodeRegistry([scenario], trace_dir, transport="memory", report_trace_failures=False,
                                   runner=runner, **episode_maker(proxy))  # fmt: skip
        episode = registry.create(scenario.id, task, condition, episode_id, agent)
        server = single_episode_server(episode) if proxy is None else proxy_server(proxy, lambda ctx: episode)
        try:
            async with Client(server, mode=mode) as client:
                yield Connected(client, trace_dir / f"{episode.id}.jsonl", episode.id, episode)
        finally:
            episode.end("disconnected")
    elif transport == "stdio":
        episode_id = episode_id or new_episode_id(scenario.id, task, condition.seed)
        command = serve_command(scenario, task, condition, trace_dir, episode_id, agent, proxy, runner=runner)
        # The server runs the runner's code: the SDK passes only a few variables on, so PYTHONPATH (where a hazard
        # kind's package may be) is passed explicitly.
        path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else None
        params = StdioServerParameters(command=command[0], args=command[1:], env=path)
        async with Client(params, mode=mode) as client:
            yield Connected(client, trace_dir / f"{episode_id}.jsonl", episode_id)
    else:
        if http_host is None:
            raise ValueError("the http transport needs a running HttpHost")
        created = await http_host.create_episode(scenario.id, task, condition, agent, episode_id)
        # The public answer names no trace path; the host runs in this process and knows where the trace goes.
        served = http_host.registry.get(created["episode_id"])
        trace = served.trace.path if served is not None else None
        try:
            async with Client(streamable_http_client(created["mcp_url"], http_client=http_host.mcp_http),
                              mode=mode) as client:  # fmt: skip
                yield Connected(
                    client,
                    trace or http_host.registry.trace_path(created["episode_id"]),
                    created["episode_id"],
                    served,
                )
        finally:
            if served is not None:
                served.end("disconnected")

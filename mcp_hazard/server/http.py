"""Serve many episodes over Streamable HTTP, isolated by an episode path.

Identity: each episode has its own MCP endpoint, `/episodes/{episode_id}/mcp?key=KEY`. The path works in both
protocol eras (the 2026-07-28 era has no session id at all) and with any client that only takes a URL; the key
(access.py) makes the URL reach that one episode. Episodes are created by `POST /episodes` (JSON: scenario, task,
seed) which returns the URL, or on first use of a path with the condition and the control token in the query
string: `/episodes/my-run-1/mcp?scenario=travel&task=cheapest-trip&seed=7&token=TOKEN`.

The episode API's routes are control.py's. Every route sits behind the Host/Origin rule and the control token or the
episode's key (access.py). Episodes are released from memory after a TTL
(episodes.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_hazard.server.access import LOOPBACK, AccessGuard, EpisodeKeys, problem, security_for
from mcp_hazard.server.app import EpisodeNotFound, build_server
from mcp_hazard.server.control import ControlPlane, bad_id
from mcp_hazard.server.episode_gate import EpisodeGate
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.server.frames import FrameGuard, episode_recorder
from mcp_hazard.server.served_episode import Episode

__all__ = ["LOOPBACK", "build_http_app"]

_MCP_METHODS = ("GET", "POST", "DELETE")
_CHECKED_BEFORE = TransportSecuritySettings(enable_dns_rebinding_protection=False)
"""What the SDK's endpoint is told: AccessGuard, in front of every route, applies the Host/Origin rule first."""


class _PathIds:
    """Checks the episode id in `/episodes/{id}` and `/episodes/{id}/mcp` before routing. Starlette's route patterns
    end in `$` and their `.` stops at a newline, so `/episodes/abc%0A` would otherwise be routed as episode `abc`.

    An MCP request (nearly every request) goes straight to the episode's endpoint with its id as the path parameter,
    as the router would send it, without the router's pattern matching and middleware on every tools/call."""

    def __init__(self, app: ASGIApp, mcp_endpoint: ASGIApp) -> None:
        self.app = app
        self.mcp_endpoint = mcp_endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path.startswith("/episodes/"):
            rest = path[len("/episodes/") :]
            episode_id = rest.removesuffix("/mcp")
            refused = bad_id(episode_id)
            if refused is not None:
                await refused(scope, receive, send)
                return
            if episode_id != rest and scope["method"] in _MCP_METHODS:
                scope["path_params"] = {"episode_id": episode_id}
                await self.mcp_endpoint(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_http_app(
    registry: EpisodeRegistry,
    *,
    host: str = "127.0.0.1",
    token: str | None,
    keys: EpisodeKeys | None = None,
    build: Callable[[Any], Any] = build_server,
    around: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
) -> ASGIApp:
    """The episode API plus one MCP endpoint per episode, behind the Host/Origin rule, the control token (None: the
    control plane is open, `--no-token`) and each episode's key.

    `build` makes the MCP server from an episode resolver (a proxy serves a real server's tools); `around` is held
    open for the app's life (a proxy's connections to the real server live in it)."""
    keys = keys or EpisodeKeys()

    def resolve(ctx: Any) -> Episode:
        request = ctx.request
        episode_id = request.path_params.get("episode_id") if request is not None else None
        episode = registry.get(episode_id) if episode_id else None
        if episode is None:
            raise EpisodeNotFound(f"no episode {episode_id!r}")
        return episode

    # The SDK reaps its own idle sessions after the same TTL, so a client that vanished without DELETE is freed too.
    # It checks Host and Origin no more: AccessGuard has applied the same rule to every request before routing.
    manager = StreamableHTTPSessionManager(
        app=build(resolve), security_settings=_CHECKED_BEFORE, session_idle_timeout=registry.ttl or None
    )
    gate = FrameGuard(EpisodeGate(registry, StreamableHTTPASGIApp(manager)), episode_recorder(registry.get))
    control = ControlPlane(registry, token, keys)
    app = Starlette(
        routes=[  # the MCP endpoint is reached through _PathIds; here for the methods it refuses (405)
            Route("/episodes/{episode_id:path}/mcp", gate, methods=list(_MCP_METHODS)),
            *control.routes(),
        ],
        exception_handlers={404: _not_found, 405: _not_allowed},
        lifespan=_lifespan(registry, manager, around),
    )
    return AccessGuard(_PathIds(app, gate), security=security_for(host), token=token, keys=keys)


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return problem(404, "no such route; the routes are /, /episodes, /episodes/{id}, /episodes/{id}/mcp, /scenarios")


async def _not_allowed(request: Request, exc: Exception) -> JSONResponse:
    return problem(405, f"{request.method} is not allowed on {request.url.path}")


def _lifespan(
    registry: EpisodeRegistry,
    manager: StreamableHTTPSessionManager,
    around: Callable[[], AbstractAsyncContextManager[Any]] | None,
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """For the app's life: what `around` holds open, the SDK's session manager, and the sweeper that releases stale
    episodes even when no request arrives to trigger a sweep; at the end every episode is closed."""

    async def sweeper() -> None:
        assert registry.ttl is not None
        interval = max(0.05, min(registry.ttl / 4, 5.0))
        while True:
            await anyio.sleep(interval)
            registry.sweep(force=True)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if around is not None:
                await stack.enter_async_context(around())
            await stack.enter_async_context(manager.run())
            group = await stack.enter_async_context(anyio.create_task_group())
            if registry.ttl is not None:
                group.start_soon(sweeper)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                registry.close_all("server_stopped")

    return lifespan

"""Serve many episodes over Streamable HTTP, isolated by an episode path.

Identity: each episode has its own MCP endpoint, `/episodes/{episode_id}/mcp?key=KEY`. The path works in both
protocol eras (the 2026-07-28 era has no session id at all) and with any client that only takes a URL; the key
(access.py) makes the URL reach that one episode. Episodes are created by `POST /episodes` (JSON: scenario, task,
seed) which returns the URL, or on first use of a path with the condition and the control token in the query
string: `/episodes/my-run-1/mcp?scenario=travel&task=cheapest-trip&seed=7&token=TOKEN`.

Everything here may be read by the agent under test, so what a route returns without operator rights never names the
condition (hazards, schedule), the trace path, the answer or the golden path. Every route sits behind the Host/Origin
rule and the control token or the episode's key (access.py). Episodes are released from memory after a TTL
(episodes.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
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

from mcp_hazard.errors import UserError
from mcp_hazard.server.access import LOOPBACK, AccessGuard, EpisodeKeys, problem, security_for
from mcp_hazard.server.app import EpisodeNotFound, build_server
from mcp_hazard.server.bodies import CLOSE, BodyTooLarge, ClientGone, read_body
from mcp_hazard.server.episode import Episode
from mcp_hazard.server.episodes import EpisodeConflict, EpisodeRegistry, parse_condition, valid_id
from mcp_hazard.server.frames import FrameGuard, episode_recorder
from mcp_hazard.server.gate import EpisodeGate, condition_fields, missing, unstored
from mcp_hazard.trace.storage import StorageError

__all__ = ["LOOPBACK", "build_http_app"]

MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_PAGE = 100
"""Episodes per `GET /episodes` page when no limit is given."""
MAX_PAGE = 1000
"""Largest page: 1,000 public entries are about 250 kB of JSON."""
ROUTES = [
    ("GET", "/", "this index (the one route that needs no token)"),
    ("GET", "/scenarios", "the scenarios served, with their tasks"),
    ("POST", "/episodes", "create an episode (JSON: scenario, task, seed, hazards, ...); returns its mcp_url"),
    ("GET", "/episodes", "list episodes, ?limit=N&cursor=C"),
    ("GET", "/episodes/{episode_id}", "one episode"),
    ("DELETE", "/episodes/{episode_id}", "end an episode (its trace stays)"),
    (
        "POST",
        "/episodes/{episode_id}/mcp",
        "the episode's MCP endpoint, its mcp_url with ?key= (Streamable HTTP; GET and DELETE too)",
    ),
]
DOCS = {
    "http_api": "docs/http-api.md",
    "security": "docs/security.md",
    "agents": "docs/agents.md",
}
"""Where each route is documented, relative to the mcp-hazard source folder."""

_problem = problem
_MCP_METHODS = ("GET", "POST", "DELETE")
_CHECKED_BEFORE = TransportSecuritySettings(enable_dns_rebinding_protection=False)
"""What the SDK's endpoint is told: AccessGuard, in front of every route, applies the Host/Origin rule first."""


def _bound_url(scope: Scope) -> str:
    """The address the connection reached, from the socket, never from the Host header an attacker controls."""
    server = scope.get("server")
    if not server:
        return "http://127.0.0.1"
    host, port = server[0], server[1]
    host = f"[{host}]" if ":" in str(host) else str(host)
    return f"http://{host}" if port is None else f"http://{host}:{port}"


def _describe(
    episode: Episode, base_url: str, key: str, *, operator: bool = False, trace: str | None = None
) -> dict[str, Any]:
    """What a control-plane caller may see; the condition and the trace path only with operator rights."""
    shown: dict[str, Any] = {
        "episode_id": episode.id,
        "mcp_url": f"{base_url}/episodes/{episode.id}/mcp?key={key}",
        "scenario": episode.scenario.id,
        "task": episode.task.id,
        "ended": episode.ended,
        "answered": episode.answer is not None,
    }
    if operator:
        shown["condition"] = episode.condition.model_dump(mode="json")
        shown["end_reason"] = episode.end_reason
        shown["trace"] = trace
    return shown


def _bad_id(episode_id: str) -> JSONResponse | None:
    if valid_id(episode_id):
        return None
    shown = repr(episode_id) if len(episode_id) <= 64 else f"{episode_id[:40]!r}... ({len(episode_id)} characters)"
    return _problem(400, f"episode id {shown} must be 1-128 letters, digits, '.', '_' or '-'")


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
            refused = _bad_id(episode_id)
            if refused is not None:
                await refused(scope, receive, send)
                return
            if episode_id != rest and scope["method"] in _MCP_METHODS:
                scope["path_params"] = {"episode_id": episode_id}
                await self.mcp_endpoint(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _page_args(request: Request) -> tuple[int, int | None] | JSONResponse:
    limit_text = request.query_params.get("limit", str(DEFAULT_PAGE))
    cursor_text = request.query_params.get("cursor")
    if not (limit_text.isascii() and limit_text.isdigit() and len(limit_text) <= 6) or int(limit_text) < 1:
        return _problem(400, f"limit must be a whole number of at least 1 (a page holds at most {MAX_PAGE})")
    if cursor_text is not None and not (cursor_text.isascii() and cursor_text.isdigit() and len(cursor_text) <= 18):
        return _problem(400, "cursor must be the next_cursor of an earlier page")
    return min(int(limit_text), MAX_PAGE), int(cursor_text) if cursor_text is not None else None


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

    server = build(resolve)
    security = security_for(host)
    # The SDK reaps its own idle sessions after the same TTL, so a client that vanished without DELETE is freed too.
    # It checks Host and Origin no more: AccessGuard has applied the same rule to every request before routing.
    manager = StreamableHTTPSessionManager(
        app=server, security_settings=_CHECKED_BEFORE, session_idle_timeout=registry.ttl or None
    )
    gate = FrameGuard(EpisodeGate(registry, StreamableHTTPASGIApp(manager)), episode_recorder(registry.get))

    def operator(request: Request) -> bool | JSONResponse:
        """`?detail=operator` shows the condition and trace path; it needs a configured token (the guard has
        already checked the caller presented it)."""
        detail = request.query_params.get("detail")
        if detail is None:
            return False
        if detail != "operator":
            return _problem(400, "detail must be 'operator'")
        if token is None:
            return _problem(403, "operator detail needs a control token; this server was started with --no-token")
        return True

    def describe(episode: Episode, scope: Scope, rights: bool) -> dict[str, Any]:
        trace = str(episode.trace.path) if rights else None
        return _describe(episode, _bound_url(scope), keys.of(episode.id), operator=rights, trace=trace)

    async def create_episode(request: Request) -> JSONResponse:
        rights = operator(request)
        if isinstance(rights, JSONResponse):
            return rights
        if not request.headers.get("content-type", "").lower().startswith("application/json"):
            # A browser can send a cross-site form or text/plain POST without asking first; never JSON.
            return _problem(415, "POST /episodes takes a JSON body: send Content-Type: application/json")
        try:
            body = await read_body(request.scope, request.receive, MAX_BODY_BYTES)
        except BodyTooLarge as exc:
            return _problem(413, exc.told("request body"), CLOSE)
        except ClientGone:  # nobody to answer; uvicorn drops a response to a closed connection
            return _problem(400, "the client closed the connection before its body arrived")
        try:
            payload = json.loads(body or b"{}")
        except json.JSONDecodeError as exc:
            return _problem(400, f"body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        except UnicodeDecodeError:
            return _problem(400, "body is not JSON: it is not UTF-8 text")
        if not isinstance(payload, dict):
            return _problem(400, "body must be a JSON object with scenario, task and condition fields such as seed")
        try:
            fields = condition_fields(payload)
            condition = parse_condition(fields) if fields else None  # none named: the server's default
            episode = registry.create(
                payload.get("scenario"), payload.get("task"), condition, payload.get("episode_id"), payload.get("agent")
            )
        except EpisodeConflict as exc:
            return _problem(409, str(exc))
        except StorageError as exc:
            return unstored(exc)
        except UserError as exc:
            return _problem(400, str(exc))
        return JSONResponse(describe(episode, request.scope, rights), status_code=201)

    async def list_episodes(request: Request) -> JSONResponse:
        rights = operator(request)
        if isinstance(rights, JSONResponse):
            return rights
        args = _page_args(request)
        if isinstance(args, JSONResponse):
            return args
        registry.sweep()
        episodes, next_cursor = registry.page(*args)
        return JSONResponse(
            {
                "episodes": [describe(e, request.scope, rights) for e in episodes],
                "next_cursor": None if next_cursor is None else str(next_cursor),
            }
        )

    async def show_episode(request: Request) -> JSONResponse:
        rights = operator(request)
        if isinstance(rights, JSONResponse):
            return rights
        episode_id = request.path_params["episode_id"]
        refused = _bad_id(episode_id)
        if refused is not None:
            return refused
        episode = registry.peek(episode_id)
        if episode is None:
            return missing(registry, episode_id)
        if request.method == "DELETE":
            episode.close("closed")
        return JSONResponse(describe(episode, request.scope, rights))

    async def index(request: Request) -> JSONResponse:
        from mcp_hazard import __version__

        return JSONResponse({
            "name": "mcp-hazard", "version": __version__,
            "about": "An MCP server that plays an unreliable tool environment; one MCP endpoint per episode.",
            "routes": [{"method": m, "path": path, "what": what} for m, path, what in ROUTES],
            "docs": DOCS, "token_required": token is not None,
        })  # fmt: skip

    async def list_scenarios(request: Request) -> JSONResponse:
        return JSONResponse(
            [
                {"id": s.id, "title": s.model.title, "tasks": [t.id for t in s.model.tasks], "sha256": s.sha256}
                for s in registry.scenarios.values()
            ]
        )

    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return _problem(
            404, "no such route; the routes are /, /episodes, /episodes/{id}, /episodes/{id}/mcp, /scenarios"
        )

    async def not_allowed(request: Request, exc: Exception) -> JSONResponse:
        return _problem(405, f"{request.method} is not allowed on {request.url.path}")

    async def sweeper() -> None:
        """Release stale episodes even when no request arrives to trigger a sweep."""
        assert registry.ttl is not None
        interval = max(0.05, min(registry.ttl / 4, 5.0))
        while True:
            await anyio.sleep(interval)
            registry.sweep(force=True)

    @asynccontextmanager
    async def lifespan(app: Starlette):
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

    app = Starlette(
        routes=[  # the MCP endpoint is reached through _PathIds; here for the methods it refuses (405)
            Route("/episodes/{episode_id:path}/mcp", gate, methods=list(_MCP_METHODS)),
            Route("/", index, methods=["GET"]),
            Route("/episodes", create_episode, methods=["POST"]),
            Route("/episodes", list_episodes, methods=["GET"]),
            Route("/episodes/{episode_id:path}", show_episode, methods=["GET", "DELETE"]),
            Route("/scenarios", list_scenarios, methods=["GET"]),
        ],
        exception_handlers={404: not_found, 405: not_allowed},
        lifespan=lifespan,
    )
    return AccessGuard(_PathIds(app, gate), security=security, token=token, keys=keys)

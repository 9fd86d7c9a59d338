"""Serve many episodes over Streamable HTTP, isolated by an episode path.

Identity: each episode has its own MCP endpoint, `/episodes/{episode_id}/mcp`. The path works in both protocol eras
(the 2026-07-28 era has no session id at all) and with any client that only takes a URL. Episodes are created by
`POST /episodes` (JSON: scenario, task, seed) which returns the URL, or on first use of a path with the condition in
the query string: `/episodes/my-run-1/mcp?scenario=travel&task=cheapest-trip&seed=7`.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mcp_hazard.errors import UserError
from mcp_hazard.server.app import EpisodeNotFound, build_server
from mcp_hazard.server.episode import Episode
from mcp_hazard.server.episodes import EpisodeRegistry, parse_condition

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_BODY_BYTES = 4 * 1024 * 1024


def _problem(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _describe(episode: Episode, base_url: str) -> dict[str, Any]:
    return {
        "episode_id": episode.id,
        "mcp_url": f"{base_url.rstrip('/')}/episodes/{episode.id}/mcp",
        "scenario": episode.scenario.id,
        "task": episode.task.id,
        "condition": episode.condition.model_dump(mode="json"),
        "ended": episode.ended,
        "answered": episode.answer is not None,
        "trace": str(episode.trace.path),
    }


def _condition_fields(source: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in source.items() if key not in ("scenario", "task", "episode_id", "agent")}


class _EpisodeGate:
    """Checks the episode in the path exists (creating it from the query string if asked) before MCP sees it."""

    def __init__(self, registry: EpisodeRegistry, mcp_app: StreamableHTTPASGIApp) -> None:
        self.registry = registry
        self.mcp_app = mcp_app
        self.sessions: dict[str, str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        episode_id = request.path_params["episode_id"]
        if self.registry.get(episode_id) is None:
            query = dict(request.query_params)
            names_condition = any(key in query for key in ("scenario", "task", "seed"))
            if request.method != "POST" or not names_condition:
                message = f"no episode {episode_id!r}; create it with POST /episodes or add ?scenario=...&task=..."
                await _problem(404, message)(scope, receive, send)
                return
            try:
                fields = _condition_fields(query)
                if request.query_params.getlist("hazard"):
                    fields.pop("hazard", None)
                    fields["hazards"] = request.query_params.getlist("hazard")
                if request.query_params.getlist("intervention"):
                    fields.pop("intervention", None)
                    fields["interventions"] = request.query_params.getlist("intervention")
                if "seed" in fields:
                    fields["seed"] = int(fields["seed"]) if str(fields["seed"]).isdigit() else fields["seed"]
                condition = parse_condition(fields)
                self.registry.create(
                    query.get("scenario"), query.get("task"), condition, episode_id, query.get("agent")
                )
            except UserError as exc:
                await _problem(400, str(exc))(scope, receive, send)
                return
        session = request.headers.get("mcp-session-id")
        if session is not None:
            bound = self.sessions.setdefault(session, episode_id)
            if bound != episode_id:
                await _problem(400, f"session belongs to episode {bound!r}, not {episode_id!r}")(scope, receive, send)
                return
        await self.mcp_app(scope, receive, send)


def build_http_app(registry: EpisodeRegistry, *, host: str = "127.0.0.1") -> Starlette:
    """The Starlette app: the episode API plus one MCP endpoint per episode."""

    def resolve(ctx: Any) -> Episode:
        request = ctx.request
        episode_id = request.path_params.get("episode_id") if request is not None else None
        episode = registry.get(episode_id) if episode_id else None
        if episode is None:
            raise EpisodeNotFound(f"no episode {episode_id!r}")
        return episode

    server = build_server(resolve)
    security = None
    if host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)
    gate = _EpisodeGate(registry, StreamableHTTPASGIApp(manager))

    async def create_episode(request: Request) -> JSONResponse:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return _problem(413, "request body too large")
        try:
            payload = json.loads(body or b"{}")
        except json.JSONDecodeError as exc:
            return _problem(400, f"body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        if not isinstance(payload, dict):
            return _problem(400, "body must be a JSON object with scenario, task and condition fields such as seed")
        try:
            condition = parse_condition(_condition_fields(payload))
            episode = registry.create(
                payload.get("scenario"), payload.get("task"), condition, payload.get("episode_id"), payload.get("agent")
            )
        except UserError as exc:
            return _problem(400, str(exc))
        return JSONResponse(_describe(episode, str(request.base_url)), status_code=201)

    async def list_episodes(request: Request) -> JSONResponse:
        return JSONResponse([_describe(e, str(request.base_url)) for e in registry.episodes.values()])

    async def show_episode(request: Request) -> JSONResponse:
        episode = registry.get(request.path_params["episode_id"])
        if episode is None:
            return _problem(404, f"no episode {request.path_params['episode_id']!r}")
        if request.method == "DELETE":
            episode.end("closed")
        return JSONResponse(_describe(episode, str(request.base_url)))

    async def list_scenarios(request: Request) -> JSONResponse:
        return JSONResponse(
            [
                {"id": s.id, "title": s.model.title, "tasks": [t.id for t in s.model.tasks], "sha256": s.sha256}
                for s in registry.scenarios.values()
            ]
        )

    @asynccontextmanager
    async def lifespan(app: Starlette):
        async with manager.run():
            try:
                yield
            finally:
                registry.close_all("server_stopped")

    return Starlette(
        routes=[
            Route("/episodes", create_episode, methods=["POST"]),
            Route("/episodes", list_episodes, methods=["GET"]),
            Route("/episodes/{episode_id}", show_episode, methods=["GET", "DELETE"]),
            Route("/scenarios", list_scenarios, methods=["GET"]),
            Route("/episodes/{episode_id}/mcp", gate, methods=["GET", "POST", "DELETE"]),
        ],
        lifespan=lifespan,
    )

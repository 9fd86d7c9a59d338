"""The control plane of the HTTP server (http.py): create, list, show and end episodes, and say what is served.

What a route returns without operator rights never names the condition (hazards, schedule), the trace path, the
answer or the golden path: the agent under test may read it.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Scope

from mcp_hazard.errors import UserError
from mcp_hazard.json_parse import loads
from mcp_hazard.server.access import EpisodeKeys, problem
from mcp_hazard.server.bodies import CLOSE, BodyTooLarge, ClientGone, read_body
from mcp_hazard.server.episode_gate import condition_fields, missing, unstored
from mcp_hazard.server.episodes import EpisodeConflict, EpisodeRegistry, parse_condition, valid_id
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.trace.storage import StorageError

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


def bound_url(scope: Scope) -> str:
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


def bad_id(episode_id: str) -> JSONResponse | None:
    if valid_id(episode_id):
        return None
    shown = repr(episode_id) if len(episode_id) <= 64 else f"{episode_id[:40]!r}... ({len(episode_id)} characters)"
    return _problem(400, f"episode id {shown} must be 1-128 letters, digits, '.', '_' or '-'")


def _page_args(request: Request) -> tuple[int, int | None] | JSONResponse:
    limit_text = request.query_params.get("limit", str(DEFAULT_PAGE))
    cursor_text = request.query_params.get("cursor")
    if not (limit_text.isascii() and limit_text.isdigit() and len(limit_text) <= 6) or int(limit_text) < 1:
        return _problem(400, f"limit must be a whole number of at least 1 (a page holds at most {MAX_PAGE})")
    if cursor_text is not None and not (cursor_text.isascii() and cursor_text.isdigit() and len(cursor_text) <= 18):
        return _problem(400, "cursor must be the next_cursor of an earlier page")
    return min(int(limit_text), MAX_PAGE), int(cursor_text) if cursor_text is not None else None


class ControlPlane:
    """The episode API's routes, over one registry, with the control token (None: `--no-token`) and the keys."""

    def __init__(self, registry: EpisodeRegistry, token: str | None, keys: EpisodeKeys) -> None:
        self.registry = registry
        self.token = token
        self.keys = keys

    def routes(self) -> list[Route]:
        return [
            Route("/", self.index, methods=["GET"]),
            Route("/episodes", self.create_episode, methods=["POST"]),
            Route("/episodes", self.list_episodes, methods=["GET"]),
            Route("/episodes/{episode_id:path}", self.show_episode, methods=["GET", "DELETE"]),
            Route("/scenarios", self.list_scenarios, methods=["GET"]),
        ]

    def operator(self, request: Request) -> bool | JSONResponse:
        """`?detail=operator` shows the condition and trace path; it needs a configured token (the guard has
        already checked the caller presented it)."""
        detail = request.query_params.get("detail")
        if detail is None:
            return False
        if detail != "operator":
            return _problem(400, "detail must be 'operator'")
        if self.token is None:
            return _problem(403, "operator detail needs a control token; this server was started with --no-token")
        return True

    def describe(self, episode: Episode, scope: Scope, rights: bool) -> dict[str, Any]:
        trace = str(episode.trace.path) if rights else None
        return _describe(episode, bound_url(scope), self.keys.of(episode.id), operator=rights, trace=trace)

    async def create_episode(self, request: Request) -> JSONResponse:
        rights = self.operator(request)
        if isinstance(rights, JSONResponse):
            return rights
        payload = await _json_payload(request)
        if isinstance(payload, JSONResponse):
            return payload
        try:
            fields = condition_fields(payload)
            condition = parse_condition(fields) if fields else None  # none named: the server's default
            episode = self.registry.create(
                payload.get("scenario"), payload.get("task"), condition, payload.get("episode_id"), payload.get("agent")
            )
        except EpisodeConflict as exc:
            return _problem(409, str(exc))
        except StorageError as exc:
            return unstored(exc)
        except UserError as exc:
            return _problem(400, str(exc))
        return JSONResponse(self.describe(episode, request.scope, rights), status_code=201)

    async def list_episodes(self, request: Request) -> JSONResponse:
        rights = self.operator(request)
        if isinstance(rights, JSONResponse):
            return rights
        args = _page_args(request)
        if isinstance(args, JSONResponse):
            return args
        self.registry.sweep()
        episodes, next_cursor = self.registry.page(*args)
        return JSONResponse(
            {
                "episodes": [self.describe(e, request.scope, rights) for e in episodes],
                "next_cursor": None if next_cursor is None else str(next_cursor),
            }
        )

    async def show_episode(self, request: Request) -> JSONResponse:
        rights = self.operator(request)
        if isinstance(rights, JSONResponse):
            return rights
        episode_id = request.path_params["episode_id"]
        refused = bad_id(episode_id)
        if refused is not None:
            return refused
        episode = self.registry.peek(episode_id)
        if episode is None:
            return missing(self.registry, episode_id)
        if request.method == "DELETE":
            episode.close("closed")
        return JSONResponse(self.describe(episode, request.scope, rights))

    async def index(self, request: Request) -> JSONResponse:
        from mcp_hazard import __version__

        return JSONResponse({
            "name": "mcp-hazard", "version": __version__,
            "about": "An MCP server that plays an unreliable tool environment; one MCP endpoint per episode.",
            "routes": [{"method": m, "path": path, "what": what} for m, path, what in ROUTES],
            "docs": DOCS, "token_required": self.token is not None,
        })  # fmt: skip

    async def list_scenarios(self, request: Request) -> JSONResponse:
        return JSONResponse(
            [
                {"id": s.id, "title": s.model.title, "tasks": [t.id for t in s.model.tasks], "sha256": s.sha256}
                for s in self.registry.scenarios.values()
            ]
        )


async def _json_payload(request: Request) -> dict[str, Any] | JSONResponse:
    """The JSON object of a `POST /episodes`, or the problem with its body."""
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
        payload = loads(body or b"{}")
    except json.JSONDecodeError as exc:
        return _problem(400, f"body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except UnicodeDecodeError:
        return _problem(400, "body is not JSON: it is not UTF-8 text")
    if not isinstance(payload, dict):
        return _problem(400, "body must be a JSON object with scenario, task and condition fields such as seed")
    return payload

"""The gate in front of each episode's MCP endpoint: the episode must exist (or be created from the query string, by
a caller with control rights), and a legacy-era session stays on the episode that issued it.

Lazy creation serves clients that only take a URL (a desktop assistant's config, the MCP Inspector): the first POST
to `/episodes/ID/mcp?scenario=...&task=...&seed=...&token=TOKEN` creates episode ID. It needs the control token
(access.py sets the scope's CONTROL flag), so an agent that holds only its own mcp_url, key and all, cannot create
an episode, in particular not a copy of its own task without hazards.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_hazard.errors import UserError
from mcp_hazard.logs import log
from mcp_hazard.server.access import CONTROL, header, problem
from mcp_hazard.server.episodes import EpisodeConflict, EpisodeRegistry, parse_condition
from mcp_hazard.trace.storage import StorageError

_problem = problem

_NOT_CONDITION = ("scenario", "task", "episode_id", "agent", "token", "key")
"""Fields of a request that name the episode or the caller's rights, not the condition."""


def condition_fields(source: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in source.items() if key not in _NOT_CONDITION}


def missing(registry: EpisodeRegistry, episode_id: str) -> JSONResponse:
    """404 for an id never seen; 410 when its trace is on disk (it ended or went idle and was released)."""
    if registry.trace_path(episode_id).exists():
        return _problem(410, f"episode {episode_id!r} was released (ended, or idle past the TTL); its trace is kept")
    return _problem(
        404, f"no episode {episode_id!r}; create it with POST /episodes or add ?scenario=...&task=...&token=TOKEN"
    )


def unstored(failure: StorageError) -> JSONResponse:
    """507 when the trace folder cannot take a trace (disk full, made read-only): no episode is created to fail
    later. The operator's log line names the folder; the answer, which anyone may read, does not."""
    log.error("episode refused: the trace folder cannot be written", reason=str(failure))
    return _problem(507, f"the server cannot store traces ({failure.reason}); no episode was created")


class EpisodeGate:
    """Checks the episode in the path exists (creating it from the query string if asked, with control rights only:
    an agent holding its own mcp_url cannot make itself a hazard-free copy) before MCP sees it, and keeps a session
    on the episode that issued it."""

    def __init__(self, registry: EpisodeRegistry, mcp_app: ASGIApp) -> None:
        self.registry = registry
        self.mcp_app = mcp_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        episode_id = scope["path_params"]["episode_id"]  # checked by _PathIds, which alone sends requests here
        if self.registry.get(episode_id) is None:
            request = Request(scope)
            query = dict(request.query_params)
            names_condition = any(key in query for key in ("scenario", "task", "seed"))
            if request.method != "POST" or not names_condition or not scope.get(CONTROL):
                await missing(self.registry, episode_id)(scope, receive, send)
                return
            try:
                fields = condition_fields(query)
                if request.query_params.getlist("hazard"):
                    fields.pop("hazard", None)
                    fields["hazards"] = request.query_params.getlist("hazard")
                if request.query_params.getlist("intervention"):
                    fields.pop("intervention", None)
                    fields["interventions"] = request.query_params.getlist("intervention")
                if "seed" in fields:
                    fields["seed"] = int(fields["seed"]) if str(fields["seed"]).isdigit() else fields["seed"]
                condition = parse_condition(fields) if fields else None
                self.registry.create(
                    query.get("scenario"), query.get("task"), condition, episode_id, query.get("agent")
                )
            except EpisodeConflict as exc:
                await _problem(409, str(exc))(scope, receive, send)
                return
            except StorageError as exc:
                await unstored(exc)(scope, receive, send)
                return
            except UserError as exc:
                await _problem(400, str(exc))(scope, receive, send)
                return
        session = header(scope, b"mcp-session-id")
        if session is None:
            # Only a session the SDK issued (in the answer to this request) is kept: one a client makes up is
            # never stored, and the SDK itself answers that it does not know it.
            if scope["method"] == "POST":  # it may open a session: make room for it first
                for crowded in self.registry.crowding(episode_id):
                    await self._close(scope, crowded)
            await self.mcp_app(scope, receive, _binding(send, self.registry, episode_id))
            return
        bound = self.registry.session_episode(session)
        if bound is not None and bound != episode_id:
            await _problem(400, f"session belongs to episode {bound!r}, not {episode_id!r}")(scope, receive, send)
            return
        if bound is not None:
            self.registry.used_session(session, episode_id)
        await self.mcp_app(scope, receive, send)
        if scope["method"] == "DELETE":
            self.registry.unbind_session(session)

    async def _close(self, scope: Scope, session: str) -> None:
        """Close a session as its client would, with a DELETE the SDK answers (its reply goes nowhere): the SDK
        then frees it, and its client is told `Session not found` on its next request, as after an idle timeout."""
        closing = {**scope, "method": "DELETE", "query_string": b"", "headers": [(b"mcp-session-id", session.encode())]}

        async def nothing_sent() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def dropped(message: Message) -> None:
            pass

        await self.mcp_app(closing, nothing_sent, dropped)
        self.registry.unbind_session(session)


def _binding(send: Send, registry: EpisodeRegistry, episode_id: str) -> Send:
    """`send`, binding to the episode the session id the SDK issues in its response (legacy-era initialize)."""

    async def bind(message: Message) -> None:
        if message["type"] == "http.response.start":
            for key, value in message.get("headers", ()):
                if key.lower() == b"mcp-session-id":
                    registry.bind_session(value.decode("latin-1"), episode_id)
        await send(message)

    return bind

"""The client's requests the frame relay forwarded to the server, by the id the server knows them under: the client's
own id, how the answer changes on its way back, and when the relay stops waiting for it.

A server that never answers must not hold a client's request forever: each forwarded request has a deadline (the
upstream timeout; a handshake at least CONNECT_TIMEOUT_S, as a server started with npx may download itself first),
and `expired` gives those past it, for the relay to answer with an error. A `subscriptions/listen` request is meant to
stay open for the whole session, so it has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_hazard.logs import log
from mcp_hazard.proxy.upstream import CONNECT_TIMEOUT_S
from mcp_hazard.proxy.upstream_errors import timed_out

Transform = Callable[[dict[str, Any]], dict[str, Any]]
HANDSHAKES = ("initialize", "server/discover")
LISTEN = "subscriptions/listen"


@dataclass(frozen=True)
class Waiting:
    """A forwarded request: the client's id, how its answer changes, its method and deadline."""

    client_id: Any
    transform: Transform | None
    method: str
    deadline: float | None
    seconds: float


class Forwarded:
    """The forwarded requests still waiting for the server's answer, by the server's id."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.waiting: dict[int, Waiting] = {}
        self.listens: dict[int, Any] = {}  # the server's id of a forwarded subscriptions/listen -> the client's id

    def add(self, up: int, client_id: Any, method: str, transform: Transform | None, now: float) -> None:
        seconds = max(self.timeout, CONNECT_TIMEOUT_S) if method in HANDSHAKES else self.timeout
        deadline = None if method == LISTEN else now + seconds
        self.waiting[up] = Waiting(client_id, transform, method, deadline, seconds)
        if method == LISTEN:
            self.listens[up] = client_id

    def settle(self, up: Any) -> Waiting | None:
        """The request `up` answers, no longer waiting (None: not one of the client's, or no longer waited for)."""
        if not isinstance(up, int):
            return None
        self.listens.pop(up, None)
        return self.waiting.pop(up, None)

    def server_id(self, client_id: Any) -> int | None:
        return next((up for up, waiting in self.waiting.items() if waiting.client_id == client_id), None)

    def expired(self, now: float) -> list[tuple[int, dict[str, Any]]]:
        """The requests past their deadline, no longer waiting, each with the error that answers it (logged)."""
        late = [(up, w) for up, w in self.waiting.items() if w.deadline is not None and w.deadline <= now]
        answers = []
        for up, waiting in late:
            del self.waiting[up]
            error = timed_out(waiting.method, waiting.seconds)
            log.warning("upstream request timed out", method=waiting.method, seconds=waiting.seconds)
            answers.append((up, {"jsonrpc": "2.0", "id": waiting.client_id,
                                 "error": {"code": error.code, "message": error.message}}))  # fmt: skip
        return answers

    def drain(self) -> list[Waiting]:
        """Every request still waiting (the server is gone), no longer waiting."""
        waiting = list(self.waiting.values())
        self.waiting.clear()
        self.listens.clear()
        return waiting

"""Read a request body with a bound on what is held, before anything looks at it.

Starlette's `request.body()` reads the whole body into memory before a size check can run: a 600 MB `POST /episodes`
cost 1.3 GB of RSS before its 4 MiB limit refused it, and a client that left mid-body raised `ClientDisconnect` into
the route as a traceback. Here a declared `Content-Length` over the limit is refused before one byte is read, a
chunked body is read only up to the limit, and a client that leaves is a plain outcome. A refusal's response closes
the connection (`Connection: close`), so the rest of an oversized body is never read.
"""

from __future__ import annotations

from starlette.types import Receive, Scope

from mcp_hazard.server.access import header

CLOSE = {"Connection": "close"}
"""Headers for a response that leaves part of the request unread: the connection cannot carry another request."""


class BodyTooLarge(Exception):
    """The body exceeds `limit`; `declared` is its Content-Length when it gave one."""

    def __init__(self, declared: int | None, limit: int) -> None:
        super().__init__(declared, limit)
        self.declared = declared
        self.limit = limit

    def told(self, noun: str) -> str:
        """`noun` and its size against the limit, for a one-line message."""
        if self.declared is not None:
            return f"{noun} of {self.declared} bytes exceeds {self.limit}"
        return f"{noun} exceeds {self.limit} bytes (reading stopped there)"


class ClientGone(Exception):
    """The client closed the connection before its body arrived: nobody is left to answer."""


def declared_length(scope: Scope) -> int | None:
    """The Content-Length header as a number (the HTTP server has checked it is digits), or None."""
    value = header(scope, b"content-length")
    return int(value) if value is not None and value.strip().isdigit() else None


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The whole body, at most `limit` bytes; BodyTooLarge past it (before reading, when Content-Length says so),
    ClientGone when the client leaves first."""
    declared = declared_length(scope)
    if declared is not None and declared > limit:
        raise BodyTooLarge(declared, limit)
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(declared, limit)
        chunks.append(chunk)
        more = bool(message.get("more_body", False))
    return b"".join(chunks)

"""How a request to the real server fails: an `UpstreamError` with the JSON-RPC code the client gets. Apart from
upstream.py, so that the transports upstream.py opens (sdk_transports.py, server_process.py) can raise it too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_hazard.errors import first_error

if TYPE_CHECKING:
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

LOST = -32603
"""JSON-RPC's internal error: the server's connection was lost, or its answer could not be used."""
REQUEST_TIMEOUT = -32001
"""The MCP SDKs' code for a request that got no answer in time."""


class UpstreamError(Exception):
    """The server answered a request with a JSON-RPC error, or could not be reached: passed on with its code."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def to_mcp(self) -> MCPError:
        from mcp.shared.exceptions import MCPError

        return MCPError(self.code, self.message, self.data)


def timed_out(method: str, seconds: float) -> UpstreamError:
    return UpstreamError(
        REQUEST_TIMEOUT, f"the upstream server did not answer {method} within {seconds:g} s (--upstream-timeout)"
    )


def unfit(method: str, exc: ValidationError) -> UpstreamError:
    """The server's answer to `method` (live, or as a cassette recorded it) that the SDK's model of it refused, said
    by its first problem: the client gets -32603, never a result the protocol does not allow."""
    where, message = first_error(exc)
    text = " ".join(f"the server's answer to {method} does not fit the protocol: {where}: {message}".split())
    return UpstreamError(LOST, text[:300])

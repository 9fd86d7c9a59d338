"""Who may talk to the HTTP server: the Host/Origin rule and the optional bearer token, in front of every route.

The SDK checks Host and Origin on its own MCP endpoints only. A web page in the user's browser can otherwise reach the
REST routes (`/episodes`, `/scenarios`) by DNS rebinding or a cross-site request, so the same rule, built from the
same `TransportSecuritySettings`, is applied here to every request before any route sees it.
"""

from __future__ import annotations

import hmac
import os

from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")
TOKEN_ENV = "MCP_HAZARD_TOKEN"


def problem(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """Every refusal is one JSON object with one line of text: clients and people read the same message."""
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def security_for(host: str) -> TransportSecuritySettings | None:
    """The Host/Origin rule for a bound address: loopback names always; the bound name too when it is a specific
    address. A wildcard bind cannot know the names it will be reached by, so it checks nothing (serve warns and
    recommends --token)."""
    if host in WILDCARD:
        return None
    names = ["127.0.0.1", "localhost", "[::1]"]
    if host not in LOOPBACK:
        names.append(f"[{host}]" if ":" in host else host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"http://{name}:*" for name in names],
    )


def token_from_env(given: str | None) -> str | None:
    """`--token` wins over the environment variable; an empty value means no token."""
    token = given if given is not None else os.environ.get(TOKEN_ENV)
    return token or None


def header(scope: Scope, name: bytes) -> str | None:
    """One request header (`name` in lower case, as ASGI servers give them), read from the scope without building a
    starlette `Request`: every request passes here, and most need two or three headers."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def _allowed(value: str, allowed: list[str]) -> bool:
    """The SDK's rule for a Host or Origin value: listed as it is, or listed as `NAME:*` and sent with any port."""
    if value in allowed:
        return True
    return any(pattern.endswith(":*") and value.startswith(pattern[:-1]) for pattern in allowed)


class AccessGuard:
    """ASGI middleware: Host/Origin first (a rebinding page never learns whether a token is set), then the token."""

    def __init__(self, app: ASGIApp, *, security: TransportSecuritySettings | None, token: str | None) -> None:
        self.app = app
        checks = security is not None and security.enable_dns_rebinding_protection
        self.hosts = list(security.allowed_hosts) if checks and security is not None else None
        self.origins = list(security.allowed_origins) if checks and security is not None else []
        self.token = token.encode("utf-8") if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.hosts is not None:
            refused = self._refusal(scope)
            if refused is not None:
                status, why = refused
                message = f"{why}: this server answers only requests addressed to its own loopback or bound name"
                await problem(status, message)(scope, receive, send)
                return
        if self.token is not None and not self._authorised(scope):
            await problem(
                401,
                "missing or wrong bearer token: send the header 'Authorization: Bearer TOKEN' (serve --token)",
                {"WWW-Authenticate": "Bearer"},
            )(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        """The SDK's statuses and words for the rule it applies on its own endpoints (421 for the Host, 403 for the
        Origin), so a refusal reads the same whichever checked first."""
        assert self.hosts is not None
        host = header(scope, b"host")
        if not host or not _allowed(host, self.hosts):
            return 421, "Invalid Host header"
        origin = header(scope, b"origin")
        if origin and not _allowed(origin, self.origins):
            return 403, "Invalid Origin header"
        return None

    def _authorised(self, scope: Scope) -> bool:
        """Constant-time comparison, so the token cannot be guessed a byte at a time from response times."""
        assert self.token is not None
        scheme, _, given = (header(scope, b"authorization") or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), self.token)

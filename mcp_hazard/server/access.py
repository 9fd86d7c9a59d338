"""Who may talk to the HTTP server: the Host/Origin rule, then the control token or an episode's key.

Two kinds of caller share one server. The operator (harness, CI, researcher) drives the *control plane*: it creates,
lists and ends episodes and reads operator detail, with the control token. An agent under test gets one `mcp_url`,
which carries its episode's key (`/episodes/{id}/mcp?key=...`), and that URL reaches that episode's MCP endpoint and
nothing else: an agent with an HTTP tool cannot list other episodes' URLs, answer into them, or make itself a
hazard-free copy of its task. The key is an HMAC of the episode id under a secret drawn at start, so it needs no
storage, cannot be guessed from the id, and still identifies the rightful holder after the episode is released (410
rather than 404). The control token also opens every MCP endpoint, and is what lazy creation by URL takes
(`?token=...`, as Jupyter's), so a client that only takes a URL can still create its episode.

The Host/Origin rule runs first on every route: a web page in the user's browser (DNS rebinding, a cross-site
request) is refused before it could learn anything, even whether a token is set. Host and Origin are parsed and
compared whole (the SDK's `NAME:*` rule is a prefix match, which let `127.0.0.1:8765@evil.example` through).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from urllib.parse import parse_qsl

from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_hazard.errors import UserError

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")
TOKEN_ENV = "MCP_HAZARD_TOKEN"
CONTROL = "mcp_hazard.control"
"""Scope key set by AccessGuard: True when the caller has control rights (the token, or a server run --no-token)."""
OPEN_PATHS = ("/",)
"""Routes anyone past the Host/Origin rule may read: the index (name, version, routes, whether a token is needed)."""

_HOST = re.compile(r"(\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9.-]{1,253}):([0-9]{1,5})")
_ORIGIN = re.compile(r"http://" + _HOST.pattern)


def problem(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """Every refusal is one JSON object with one line of text: clients and people read the same message."""
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def security_for(host: str) -> TransportSecuritySettings | None:
    """The Host/Origin rule for a bound address: loopback names always; the bound name too when it is a specific
    address. A wildcard bind cannot know the names it will be reached by, so it checks nothing (the control token
    still guards the control plane)."""
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


def control_token(given: str | None, *, no_token: bool) -> tuple[str | None, bool]:
    """(the control token or None for an open control plane, whether it was generated here).

    `--token` wins over $MCP_HAZARD_TOKEN; neither set: a fresh token from `secrets`, printed once by the caller.
    `--no-token` opens the control plane (the caller warns); with `--token` it is a contradiction."""
    if no_token:
        if given is not None:
            raise UserError("--token and --no-token contradict each other: give one")
        return None, False
    if given is not None and not given.strip():
        raise UserError("--token is empty: give a token, or --no-token to open the control plane")
    token = given if given is not None else os.environ.get(TOKEN_ENV, "").strip() or None
    if token is not None:
        return token, False
    return secrets.token_urlsafe(24), True


KNOWN_KEYS = 4096
"""Keys kept once derived (every MCP request checks one): a few hundred kB at most; the cache starts over when full."""


class EpisodeKeys:
    """Each episode's key: HMAC-SHA256 of its id under a secret drawn at start, 128 bits in URL-safe base64."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self._known: dict[str, str] = {}

    def of(self, episode_id: str) -> str:
        key = self._known.get(episode_id)
        if key is None:
            digest = hmac.new(self._secret, episode_id.encode("utf-8"), hashlib.sha256).digest()[:16]
            key = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
            if len(self._known) >= KNOWN_KEYS:
                self._known.clear()
            self._known[episode_id] = key
        return key

    def matches(self, episode_id: str, given: str) -> bool:
        return hmac.compare_digest(self.of(episode_id).encode("ascii"), given.encode("utf-8", "replace"))


def header(scope: Scope, name: bytes) -> str | None:
    """One request header (`name` in lower case, as ASGI servers give them), read from the scope without building a
    starlette `Request`: every request passes here, and most need two or three headers."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def query_value(scope: Scope, name: str) -> str | None:
    """One query-string parameter (the last, if repeated), parsed only when its name appears at all: an agent's MCP
    requests carry one short `key=`, and this runs on every one of them."""
    raw: bytes = scope.get("query_string", b"")
    prefix = name.encode("ascii") + b"="
    if prefix not in raw:
        return None
    if raw.startswith(prefix) and b"&" not in raw and b"%" not in raw and b"+" not in raw:
        return raw[len(prefix) :].decode("latin-1")  # `key=KEY` alone: an agent's every request
    found = None
    for key, value in parse_qsl(raw.decode("latin-1"), keep_blank_values=True):
        if key == name:
            found = value
    return found


def _names(patterns: list[str], prefix: str = "") -> frozenset[str]:
    """The names of `NAME:*` patterns (the SDK's form), lower case; `prefix` is stripped first (origins)."""
    return frozenset(p.removeprefix(prefix).removesuffix(":*").lower() for p in patterns if p.endswith(":*"))


def _exact(pattern: re.Pattern[str], value: str, names: frozenset[str]) -> bool:
    """`value` is exactly `NAME:PORT` (an origin: `http://NAME:PORT`) with a listed NAME and a port number: nothing
    before, after or inside it (no `@`, space, path or extra label)."""
    found = pattern.fullmatch(value)
    return found is not None and found.group(1).lower() in names and int(found.group(2)) <= 65535


def _mcp_episode(path: str) -> str | None:
    """The episode id of an MCP endpoint path `/episodes/{id}/mcp` (its validity is checked after, before routing)."""
    if path.startswith("/episodes/") and path.endswith("/mcp"):
        return path[len("/episodes/") : -len("/mcp")]
    return None


NO_EPISODE_HERE = (
    "no episode at this URL: an episode's MCP endpoint is the mcp_url POST /episodes returned, with its key"
)
"""The one answer to an MCP request without the episode's key or the control token, whether the episode exists or
not: a stranger learns nothing, not even which ids are in use."""


class AccessGuard:
    """ASGI middleware: Host/Origin first, then rights: the index is open; an MCP endpoint takes its episode's key
    or the control token; every other route takes the control token (`Authorization: Bearer` or `?token=`)."""

    def __init__(
        self, app: ASGIApp, *, security: TransportSecuritySettings | None, token: str | None, keys: EpisodeKeys
    ) -> None:
        self.app = app
        checks = security is not None and security.enable_dns_rebinding_protection
        self.hosts = _names(list(security.allowed_hosts)) if checks and security is not None else None
        self.origins = _names(list(security.allowed_origins), "http://") if checks and security is not None else None
        self.token = token.encode("utf-8") if token else None
        self.keys = keys

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
        control = self.token is None or self._has_token(scope)
        scope[CONTROL] = control
        if not control:
            path = scope.get("path", "")
            episode_id = _mcp_episode(path)
            if episode_id is not None:
                key = query_value(scope, "key")
                if key is None or not self.keys.matches(episode_id, key):
                    await problem(404, NO_EPISODE_HERE)(scope, receive, send)
                    return
            elif path not in OPEN_PATHS:
                await problem(
                    401,
                    "missing or wrong control token: send 'Authorization: Bearer TOKEN' (or ?token=TOKEN); the "
                    "server printed it at start, or was given it with --token or MCP_HAZARD_TOKEN",
                    {"WWW-Authenticate": "Bearer"},
                )(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        """The SDK's statuses and words (421 for the Host, 403 for the Origin), so a refusal reads the same as the
        SDK's own would."""
        assert self.hosts is not None and self.origins is not None
        host = header(scope, b"host")
        if not host or not _exact(_HOST, host, self.hosts):
            return 421, "Invalid Host header"
        origin = header(scope, b"origin")
        if origin and not _exact(_ORIGIN, origin, self.origins):
            return 403, "Invalid Origin header"
        return None

    def _has_token(self, scope: Scope) -> bool:
        """The control token, in the Authorization header or the query string; compared in constant time, so it
        cannot be guessed a byte at a time from response times."""
        assert self.token is not None
        scheme, _, given = (header(scope, b"authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode("utf-8", "replace"), self.token):
            return True
        in_query = query_value(scope, "token")
        return in_query is not None and hmac.compare_digest(in_query.encode("utf-8", "replace"), self.token)

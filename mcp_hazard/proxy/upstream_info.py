"""How the proxy reaches the real server, and what the server said about itself: plain records, apart from
upstream.py (the SDK client), so that scoring or replaying a proxy episode's trace needs no SDK import.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

UPSTREAM_TIMEOUT_S = 60.0
"""How long the proxy waits for the server's answer to one request (`--upstream-timeout`, `upstream.timeout`)."""


@dataclass(frozen=True)
class UpstreamSource:
    """How to reach the server: a command (stdio), a URL (Streamable HTTP), or a cassette (replay); and how long to
    wait for each of its answers."""

    argv: tuple[str, ...] = ()
    url: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    cassette: str | None = None
    timeout: float = UPSTREAM_TIMEOUT_S
    stderr_log: str | None = None
    """A command's stderr is appended to this file (`proxy --upstream-log`, `run`'s RUN/upstream.log) instead of
    passing through to the proxy's own stderr."""

    def describe(self) -> dict[str, Any]:
        """How the trace names it: never the environment (it may hold secrets)."""
        if self.cassette is not None:
            return {"cassette": self.cassette}
        if self.url is not None:
            return {"url": self.url}
        return {"command": list(self.argv)}

    def label(self) -> str:
        if self.cassette is not None:
            return f"cassette {self.cassette}"
        return self.url if self.url is not None else shlex.join(self.argv)


@dataclass
class UpstreamInfo:
    """What the server said about itself when the proxy connected (recorded in the trace and the cassette)."""

    name: str
    version: str
    protocol_version: str
    capabilities: dict[str, Any]
    instructions: str | None = None
    source: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """`via` says how the server was reached (a command, a URL, a cassette): volatile in a trace, since a replay
        of a recorded run differs only there."""
        return {
            "name": self.name, "version": self.version, "protocol_version": self.protocol_version,
            "capabilities": self.capabilities, "instructions": self.instructions, "via": self.source,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any], source: dict[str, Any] | None = None) -> UpstreamInfo:
        via = source if source is not None else data.get("via")
        return cls(
            name=str(data.get("name") or "unknown"), version=str(data.get("version") or ""),
            protocol_version=str(data.get("protocol_version") or ""), capabilities=dict(data.get("capabilities") or {}),
            instructions=data.get("instructions"), source=dict(via) if isinstance(via, dict) else {},
        )  # fmt: skip

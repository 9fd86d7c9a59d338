"""A real server's tool as the hazards know it: its listing plus what the proxy file notes about it."""

from __future__ import annotations

from typing import Any

from mcp_hazard.scenario.models import ToolSpec


class ProxyToolSpec(ToolSpec):
    """A tool of the real server. `listed` is the tool exactly as the server listed it (JSON): it is served with only
    what hazards and interventions change. The other fields are the proxy file's notes (proxy/config.py)."""

    retry_safe: bool = False
    fields: list[str] = []
    pages: str | None = None
    cross_check: list[str] = []
    fallback_tools: list[str] = []
    listed: dict[str, Any] = {}


def noted(spec: ToolSpec | None) -> ProxyToolSpec | None:
    return spec if isinstance(spec, ProxyToolSpec) else None

"""The server's handshake (or discovery) answer as the frame relay passes it to the client, and what the relay
learns from it about the server.

The proxy may announce a changed tool list (hazards drift tools), so `listChanged` is always on; with a task it also
serves a prompt and a resource and says so in the instructions. The SDK path (app.py) says the same through the
SDK's own handshake.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.proxy import task
from mcp_hazard.proxy.upstream_info import UpstreamInfo


def client_handshake(result: dict[str, Any], *, with_task: bool) -> dict[str, Any]:
    """The server's answer as the client gets it."""
    capabilities = dict(result.get("capabilities") or {})
    tools = dict(capabilities.get("tools") or {})
    tools["listChanged"] = True
    capabilities["tools"] = tools
    if with_task:
        capabilities.setdefault("prompts", {})
        capabilities.setdefault("resources", {})
    out = {**result, "capabilities": capabilities}
    if with_task:
        out["instructions"] = task.with_instructions(result.get("instructions"))
    return out


def server_info(result: dict[str, Any], known: UpstreamInfo | None, source: dict[str, Any]) -> UpstreamInfo:
    """The server's own info and capabilities, before the proxy adds any; a part the answer lacks comes from `known`
    (what the first connection read)."""
    server = result.get("serverInfo") or (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo") or {}
    versions = result.get("supportedVersions") or []
    return UpstreamInfo(
        name=str(server.get("name") or (known.name if known else "unknown")),
        version=str(server.get("version") or (known.version if known else "")),
        protocol_version=str(result.get("protocolVersion") or (versions[0] if versions else "")),
        capabilities=dict(result.get("capabilities") or {}), instructions=result.get("instructions"),
        source=source,
    )  # fmt: skip

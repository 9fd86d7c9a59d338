"""A real server's tool as the hazards know it: its listing plus what the proxy file notes about it."""

from __future__ import annotations

from typing import Any

from mcp_hazard.errors import first_error
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


def usable_tools(tools: Any) -> list[dict[str, Any]]:
    """The tools of one `tools/list` page the proxy can serve. A tool whose `inputSchema` is `{}` or names no `type`
    (common, though the protocol asks for `type: object`) is served as an object schema with what it has: arguments
    are always an object, and its server has the last word on them. A tool that is not an object with a text name,
    or whose `inputSchema` is not an object schema, is left out with one log line: the protocol's model would refuse
    the whole page for it."""
    from mcp_hazard.logs import log

    usable: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        name = tool.get("name") if isinstance(tool, dict) else None
        problem = _tool_problem(tool) if isinstance(name, str) else "a tool without a text name"
        if problem is not None:
            log.warning("a tool the upstream server lists is not served", tool=str(name)[:100], reason=problem)
            continue
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict) or "type" not in schema:
            tool = {**tool, "inputSchema": {"type": "object", **(schema if isinstance(schema, dict) else {})}}
        usable.append(tool)
    return usable


def _tool_problem(tool: dict[str, Any]) -> str | None:
    schema = tool.get("inputSchema", {})
    if not isinstance(schema, dict):
        return "its inputSchema is not an object"
    if schema.get("type", "object") != "object":
        return f"its inputSchema has type {str(schema.get('type'))[:40]!r}; tool arguments are an object"
    if not isinstance(schema.get("properties", {}), dict) or not all(
        isinstance(value, dict | bool) for value in schema.get("properties", {}).values()
    ):
        return "its inputSchema's properties are not schemas"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(item, str) for item in required):
        return "its inputSchema's required is not a list of names"
    output = tool.get("outputSchema")
    if output is not None and (not isinstance(output, dict) or output.get("type") != "object"):
        return "its outputSchema is not an object schema"
    import mcp_types as types
    from pydantic import ValidationError

    try:
        types.Tool.model_validate({**tool, "inputSchema": {"type": "object", **schema}}, by_name=False)
    except ValidationError as exc:
        where, message = first_error(exc)
        return " ".join(f"{where}: {message}".split())[:200]
    return None

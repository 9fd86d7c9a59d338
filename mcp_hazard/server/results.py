"""What a call's outcome looks like to the agent and to the trace: results, errors, and what is kept of bad input."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from mcp_hazard.json_text import indented

MAX_TOOL_NAME_CHARS = 128
PREVIEW_CHARS = 200


def result_text(result: Any) -> str:
    """A result as served text: a string as it is, anything else as indented JSON."""
    return result if isinstance(result, str) else indented(result)


def text_block(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def served_result(text: str, hints: list[str], structured: Any) -> types.CallToolResult:
    """A result: its text, then each hint, and the structured content when there is one."""
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    for hint in hints:
        content.append(text_block(f"Hint: {hint}"))
    return types.CallToolResult(content=content, structured_content=structured)


def error_result(message: str, hint: str | None = None, data: dict[str, Any] | None = None) -> types.CallToolResult:
    """A tool error; `data` (machine-readable details, such as when to retry) is its structured content, which a
    client does not check against the tool's output schema for an error."""
    content: list[types.ContentBlock] = [text_block(message)]
    if hint:
        content.append(text_block(f"Hint: {hint}"))
    if data is None:
        return types.CallToolResult(content=content, is_error=True)
    return types.CallToolResult(content=content, is_error=True, structured_content=data)


def preview(value: Any) -> str:
    """What the trace keeps of arguments refused for their size: a short JSON preview with every non-ASCII character
    escaped, so a huge or invalid call cannot bloat the trace or break its UTF-8."""
    try:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 3] + "..."


def traceable_name(name: str) -> str:
    """A tool name as the trace can hold it: a lone surrogate escaped, an absurd length cut (such a name is unknown
    anyway, and the trace must stay small and valid UTF-8)."""
    if len(name) <= MAX_TOOL_NAME_CHARS and name.isascii():
        return name
    safe = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return safe if len(safe) <= MAX_TOOL_NAME_CHARS else safe[: MAX_TOOL_NAME_CHARS - 3] + "..."


class ToolCallFailed(Exception):
    """A tool's implementation failed with a protocol error (a proxied server's JSON-RPC error, a lost connection):
    the call is traced with `outcome` and `detail`, then `error` reaches the client as that JSON-RPC error."""

    def __init__(self, outcome: str, detail: str, error: Exception) -> None:
        super().__init__(detail)
        self.outcome, self.detail, self.error = outcome, detail, error

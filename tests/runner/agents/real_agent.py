"""A real external agent: connects with the MCP SDK over whatever the runner offers and answers a fare-class task.

stdio: launches `MCP_HAZARD_SERVER_COMMAND` (a JSON list) through `StdioServerParameters`.
http:  connects to `MCP_HAZARD_URL`.

It reads the flight id from `MCP_HAZARD_PROMPT`, calls `get_fare` (retrying an error result a few times, as any
careful client would), and submits the fare class. A prompt that is not about a fare class gets the answer
"unknown". Exit code 0 when an answer was submitted and accepted, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

ATTEMPTS = 6


def _target() -> Any:
    transport = os.environ["MCP_HAZARD_TRANSPORT"]
    if transport == "stdio":
        command = json.loads(os.environ["MCP_HAZARD_SERVER_COMMAND"])
        return StdioServerParameters(command=command[0], args=command[1:])
    if transport == "http":
        return os.environ["MCP_HAZARD_URL"]
    raise SystemExit(f"real agent: unknown MCP_HAZARD_TRANSPORT {transport!r}")


def _value(result: types.CallToolResult) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def solve(client: Client, prompt: str) -> str:
    listing = await client.list_tools()
    names = {tool.name for tool in listing.tools}
    flight = re.search(r"AU-\d{3}", prompt)
    if "fare class" not in prompt.lower() or flight is None or "get_fare" not in names:
        return "unknown"
    for attempt in range(ATTEMPTS):
        result = await client.call_tool("get_fare", {"flight_id": flight.group(0)}, read_timeout_seconds=10)
        if not result.is_error:
            value = _value(result)
            if isinstance(value, dict) and isinstance(value.get("fare_class"), str):
                return value["fare_class"]
            return "unknown"
        time.sleep(0.1 * (attempt + 1))
    return "unknown"


async def main() -> int:
    prompt = os.environ["MCP_HAZARD_PROMPT"]
    with open(os.environ["MCP_HAZARD_PROMPT_FILE"], encoding="utf-8") as handle:
        if handle.read() != prompt:
            print("real agent: MCP_HAZARD_PROMPT_FILE differs from MCP_HAZARD_PROMPT", file=sys.stderr)
            return 1
    async with Client(_target()) as client:
        answer = await solve(client, prompt)
        submitted = await client.call_tool("submit_answer", {"answer": answer})
    print(f"real agent: answered {answer!r} (error={submitted.is_error})", file=sys.stderr)
    return 1 if submitted.is_error else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

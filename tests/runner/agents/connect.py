"""What the helper agents share: the MCP target the runner offers them (stdio command or URL)."""

from __future__ import annotations

import json
import os
from typing import Any

from mcp import StdioServerParameters


def target() -> Any:
    """The episode to connect to: a stdio server command to launch, or the episode's URL."""
    if os.environ["MCP_HAZARD_TRANSPORT"] == "stdio":
        command = json.loads(os.environ["MCP_HAZARD_SERVER_COMMAND"])
        return StdioServerParameters(command=command[0], args=command[1:])
    return os.environ["MCP_HAZARD_URL"]

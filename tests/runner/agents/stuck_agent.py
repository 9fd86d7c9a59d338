"""An external agent that connects, lists the tools, and then hangs forever with the connection open.

Over stdio the server it launched is its own child process. Its pid, and the pids of its children (the stdio server,
if any), go to `$RUNNER_TEST_PID_DIR/$MCP_HAZARD_EPISODE_ID.pid`, one per line, once the tools are listed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters


def _target() -> Any:
    if os.environ["MCP_HAZARD_TRANSPORT"] == "stdio":
        command = json.loads(os.environ["MCP_HAZARD_SERVER_COMMAND"])
        return StdioServerParameters(command=command[0], args=command[1:])
    return os.environ["MCP_HAZARD_URL"]


def _children() -> list[int]:
    pids: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return pids


async def main() -> int:
    async with Client(_target()) as client:
        await client.list_tools()
        folder = Path(os.environ["RUNNER_TEST_PID_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{os.environ['MCP_HAZARD_EPISODE_ID']}.pid"
        partial = target.with_suffix(".tmp")
        partial.write_text("".join(f"{pid}\n" for pid in [os.getpid(), *_children()]), encoding="utf-8")
        partial.replace(target)
        await anyio.sleep_forever()
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

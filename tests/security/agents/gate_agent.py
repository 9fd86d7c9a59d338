"""An external agent that connects, lists the tools, then waits until the file `$RUNS_TEST_GATE` exists (at most
120 s) and exits 0 without answering: a run that stays under way for as long as a test needs it to."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import Client


async def main() -> int:
    target = os.environ["MCP_HAZARD_URL"]  # the runner's default transport, http
    gate = Path(os.environ["RUNS_TEST_GATE"])
    async with Client(target) as client:
        await client.list_tools()
        with anyio.move_on_after(120):
            while not gate.exists():
                await anyio.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

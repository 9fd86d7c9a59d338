"""An external agent that connects, lists the tools and exits 0 without answering (a quick, well-behaved process
for naming tests)."""

from __future__ import annotations

import sys

import anyio
from connect import target
from mcp import Client


async def main() -> int:
    async with Client(target()) as client:
        await client.list_tools()
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

"""An external agent that connects, lists the tools, and then crashes with exit code 3 (after saying why on stderr):
an agent with a bug, as opposed to one that cannot start at all (never_connects_agent.py)."""

from __future__ import annotations

import sys

import anyio
from connect import target
from mcp import Client


async def main() -> int:
    async with Client(target()) as client:
        await client.list_tools()
    print("crash agent: failing on purpose", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(anyio.run(main))

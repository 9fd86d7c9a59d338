"""An external agent that starts a child, then connects, lists the tools and hangs forever, for `--timeout` tests.

It starts a child (`sleep`) in its own process group, so a runner that kills only the agent (not its group) leaves
the child behind. Both pids go to `$RUNNER_TEST_PID_DIR/$MCP_HAZARD_EPISODE_ID.pid` (one per line) first thing,
before the SDK is imported: on a loaded machine that import alone can outlast a short `--timeout`, and the test is
about what the runner kills, whenever it kills it. Over stdio, the server it launched is a third process (its pid is
not listed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def hang() -> None:
    child = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
    folder = Path(os.environ["RUNNER_TEST_PID_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    pid_file = folder / f"{os.environ['MCP_HAZARD_EPISODE_ID']}.pid"
    partial = pid_file.with_suffix(".tmp")
    partial.write_text(f"{os.getpid()}\n{child.pid}\n", encoding="utf-8")
    partial.replace(pid_file)  # the file appears whole or not at all
    print(f"hang agent {os.getpid()} (child {child.pid}) started", file=sys.stderr, flush=True)


async def main() -> int:
    import anyio
    from connect import target
    from mcp import Client

    async with Client(target()) as client:
        await client.list_tools()
        print("hang agent: listed the tools, sleeping", file=sys.stderr, flush=True)
        await anyio.sleep_forever()
    return 0


if __name__ == "__main__":
    hang()
    import anyio

    sys.exit(anyio.run(main))

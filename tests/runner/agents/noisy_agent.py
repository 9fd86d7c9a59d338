"""An external agent that prints far more than a log should keep, leaves a child running, and exits 0 having listed
the tools: the runner must bound its log (the first 8 MiB and the last 64 KiB) and kill the child it left.

Its pid and the child's go to `$RUNNER_TEST_PID_DIR/$MCP_HAZARD_EPISODE_ID.pid`, one per line, before it prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PRINTED_MIB = 12


def start() -> None:
    child = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    folder = Path(os.environ["RUNNER_TEST_PID_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    pid_file = folder / f"{os.environ['MCP_HAZARD_EPISODE_ID']}.pid"
    partial = pid_file.with_suffix(".tmp")
    partial.write_text(f"{os.getpid()}\n{child.pid}\n", encoding="utf-8")
    partial.replace(pid_file)
    line = b"noisy agent: step " + b"." * 1005 + b"\n"  # 1 KiB a line
    for _ in range(PRINTED_MIB * 1024):
        sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()


async def main() -> int:
    from connect import target
    from mcp import Client

    async with Client(target()) as client:
        await client.list_tools()
    print("noisy agent: done, leaving my child behind", flush=True)
    return 0


if __name__ == "__main__":
    start()
    import anyio

    sys.exit(anyio.run(main))

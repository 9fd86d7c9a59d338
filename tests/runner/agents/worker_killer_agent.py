"""An external agent that, in the middle of its episode, SIGKILLs the process that started it: under
`run --executor ray` that is the Ray worker running the episode, so the worker is lost mid-run.

    python worker_killer_agent.py MARKS_DIR [--once SEED]... [--always SEED]...

Episodes of a seed named by `--once` kill their worker the first time only (a marker file in MARKS_DIR remembers
it), those of a seed named by `--always` every time; any other episode, and a `--once` one the second time, is solved
as real_agent.py solves it. Each kill leaves a line "EPISODE_ID WORKER_PID" in MARKS_DIR/kills.log. The agent
kills after listing the tools, which it does in every case, so a retried episode's trace matches an undisturbed one.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import anyio
from connect import target
from mcp import Client
from real_agent import solve


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("marks", type=Path)
    parser.add_argument("--once", type=int, action="append", default=[])
    parser.add_argument("--always", type=int, action="append", default=[])
    args = parser.parse_args()
    episode, seed = os.environ["MCP_HAZARD_EPISODE_ID"], int(os.environ["MCP_HAZARD_SEED"])
    marker = args.marks / f"{episode}.killed"
    kill = seed in args.always or (seed in args.once and not marker.exists())
    async with Client(target()) as client:
        await client.list_tools()
        if kill:
            marker.touch()
            with (args.marks / "kills.log").open("a", encoding="utf-8") as log:
                log.write(f"{episode} {os.getppid()}\n")
            os.kill(os.getppid(), signal.SIGKILL)
            os._exit(9)  # the episode's server died with the worker: nothing left to close
        answer = await solve(client, os.environ["MCP_HAZARD_PROMPT"])
        submitted = await client.call_tool("submit_answer", {"answer": answer})
    return 1 if submitted.is_error else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

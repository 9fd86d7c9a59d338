"""An external agent that hangs forever, for `--timeout` tests.

It starts a child (`sleep`) in its own process group, so a runner that kills only the agent (not its group) leaves
the child behind. Both pids go to `$RUNNER_TEST_PID_DIR/$MCP_HAZARD_EPISODE_ID.pid` (one per line) before it sleeps.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    child = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
    folder = Path(os.environ["RUNNER_TEST_PID_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{os.environ['MCP_HAZARD_EPISODE_ID']}.pid"
    partial = target.with_suffix(".tmp")
    partial.write_text(f"{os.getpid()}\n{child.pid}\n", encoding="utf-8")
    partial.replace(target)  # the file appears whole or not at all
    print(f"hang agent {os.getpid()} (child {child.pid}) sleeping", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())

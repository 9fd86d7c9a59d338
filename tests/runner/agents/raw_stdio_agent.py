"""An external agent that starts its episode's stdio server itself, in its own process group (as a client that
spawns without a new session does), speaks raw JSON-RPC lines to it, lists the tools and exits at once without an
answer. A `sleep` it leaves behind holds the server's stdin for half a second more, as a helper that outlives its
parent would; then the server sees its stdin close and ends the episode as `disconnected`. It must get to write that
end: the runner gives what is left in the group time to end before it clears it."""

from __future__ import annotations

import json
import os
import subprocess


def main() -> None:
    command = json.loads(os.environ["MCP_HAZARD_SERVER_COMMAND"])
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]  # fmt: skip
    for frame in frames:
        server.stdin.write(json.dumps(frame).encode() + b"\n")
        server.stdin.flush()
        if "id" in frame:
            print(server.stdout.readline().decode().strip()[:200], flush=True)
    subprocess.Popen(["sleep", "0.5"], pass_fds=(server.stdin.fileno(),), stdout=subprocess.DEVNULL)
    # exits without closing the pipe or waiting: the server sees its stdin close when the sleep is gone too


if __name__ == "__main__":
    main()

"""Soak: a long-running HTTP server must hold flat memory. docs/performance.md records the figures.

    python -m bench.soak [--episodes 10000] [--concurrency 16] [--ttl 5] [--trace-dir DIR]

A real `mcp-hazard serve scenarios --http 127.0.0.1:PORT --episode-ttl TTL` subprocess (a free port, traces to a temp
dir unless --trace-dir) serves every episode. Each episode goes the way an agent's would, over real HTTP with the
official SDK client, alternating the two protocol eras: `POST /episodes`, `tools/list`, one `tools/call`,
`submit_answer`, then the client closes. `--concurrency` episodes run at once. The SDK clients share one HTTP client
(`Client(url)` would make one per episode, about 70 ms of CPU each for its TLS set-up, which only slows the client).

The server's resident memory is sampled every 0.5 s from /proc/PID/status (VmRSS; psutil if installed). Printed:
RSS at start (server up, nothing created), after a warm-up of 200 episodes, peak, and at the end (after all
episodes, once the TTL has passed and `GET /episodes` is empty), plus the number of episodes still listed. The bound
is judged on end minus warm-up: eviction works when it stays a few MB however many episodes ran.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bench.processes import OPERATOR, stop
from mcp_hazard.runner.transports import free_port

REPO_ROOT = Path(__file__).resolve().parents[1]
WARM_UP = 200


def rss_kib(pid: int) -> int:
    """Resident set size in KiB: psutil when present, else /proc (Linux)."""
    try:
        import psutil

        return int(psutil.Process(pid).memory_info().rss // 1024)
    except ImportError:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("cannot read the server's resident memory")


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


async def one_episode(http: httpx.AsyncClient, shared: Any, base: str, n: int) -> None:
    created = await http.post(f"{base}/episodes", json={"scenario": "travel", "task": "fare-class", "seed": n % 97})
    created.raise_for_status()
    transport = streamable_http_client(created.json()["mcp_url"], http_client=shared)
    async with Client(transport, mode="legacy" if n % 2 else "2026-07-28") as client:
        await client.list_tools()
        await client.call_tool("get_fare", {"flight_id": "AU-426"})
        await client.call_tool("submit_answer", {"answer": "Standard"})


async def soak(args: argparse.Namespace, trace_dir: Path) -> int:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "mcp_hazard", "serve", str(REPO_ROOT / "scenarios"), "--http",
               f"127.0.0.1:{port}", "--trace-dir", str(trace_dir), "--episode-ttl", str(args.ttl)]  # fmt: skip
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    samples: list[int] = []
    try:
        async with httpx.AsyncClient(timeout=60, headers=OPERATOR) as http, create_mcp_http_client() as shared:
            with anyio.fail_after(30):
                while True:
                    try:
                        if (await http.get(f"{base}/scenarios")).status_code == 200:
                            break
                    except httpx.TransportError:
                        await anyio.sleep(0.1)
            start = rss_kib(server.pid)
            warm = 0
            done = 0
            began = time.perf_counter()

            async def sample() -> None:
                while True:
                    samples.append(rss_kib(server.pid))
                    await anyio.sleep(0.5)

            async with anyio.create_task_group() as group:
                group.start_soon(sample)
                numbers = iter(range(args.episodes))
                lock = anyio.Lock()

                async def worker() -> None:
                    nonlocal done, warm
                    for n in numbers:
                        await one_episode(http, shared, base, n)
                        async with lock:
                            done += 1
                            if done == WARM_UP:
                                warm = rss_kib(server.pid)
                            if done % 1000 == 0:
                                print(f"  {done} episodes, RSS {mib(rss_kib(server.pid))}", file=sys.stderr)

                async with anyio.create_task_group() as workers:
                    for _ in range(args.concurrency):
                        workers.start_soon(worker)
                elapsed = time.perf_counter() - began
                await anyio.sleep(args.ttl + 2)  # past the TTL: everything ended is released
                listed = (await http.get(f"{base}/episodes")).json()
                await anyio.sleep(1)
                group.cancel_scope.cancel()
            end = rss_kib(server.pid)
    finally:
        stop(server, timeout=30)
    traces = sum(1 for _ in trace_dir.glob("*.jsonl"))
    peak = max([start, warm, end, *samples])
    print(f"episodes: {done} in {elapsed:.1f} s ({done / elapsed:.0f}/s), concurrency {args.concurrency}, "
          f"TTL {args.ttl:g} s, traces on disk: {traces}")  # fmt: skip
    print(f"server RSS: start {mib(start)}, after {WARM_UP} episodes {mib(warm)}, peak {mib(peak)}, end {mib(end)}")
    print(f"end - warm-up: {mib(end - warm)}; peak - warm-up: {mib(peak - warm)}; "
          f"episodes listed at the end: {len(listed['episodes'])}")  # fmt: skip
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--ttl", type=float, default=5.0, help="--episode-ttl of the server (seconds)")
    parser.add_argument("--trace-dir", type=Path, help="where traces go (default: a temp dir, removed)")
    args = parser.parse_args()
    if args.trace_dir is not None:
        args.trace_dir.mkdir(parents=True, exist_ok=True)
        return anyio.run(soak, args, args.trace_dir)
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-soak-") as tmp:
        return anyio.run(soak, args, Path(tmp))


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    sys.exit(main())

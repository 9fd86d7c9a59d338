"""Memory per live episode: what one more episode costs a long-running server while it is live (created, listed,
called, not yet ended or released). bench/README.md explains it; docs/performance.md records the figures. The
flat-memory check over 10,000 episodes is `bench/soak.py`.

    python -m bench.episode_memory [--episodes 1000] [--http-episodes 300] [--top 12] [--no-http]
                                   [--scenario scenarios/travel.yaml] [--task fare-class]

(1) In this process, under tracemalloc: an `EpisodeRegistry` (as `serve --http` holds it, no TTL) and one SDK server
    built by `build_server` over it, as the HTTP app builds it. Each episode is created, reached once through an
    in-memory SDK client (`tools/list`, the task's first golden call), and the client closes; the episode stays
    live in the registry (it did not answer). After a warm-up of 20 episodes (released), `--episodes` more: the
    traced bytes they hold (snapshot difference after a full collection), per episode, with the allocation sites
    that dominate (by file and line), the process RSS difference, and the open file descriptors per episode.
(2) Real servers over HTTP, by RSS (/proc VmRSS): `python -m mcp_hazard serve SCENARIO --http` and `python -m
    bench.bare_server SCENARIO --task T --http` (the SDK's `streamable_http_app`). `--http-episodes` clients each
    connect, list and call once. For mcp-hazard first in the 2026-07-28 era, each client closing at once (no
    session: what stays is the episode, live in the registry until it answers or the TTL passes); then, for both
    servers, in the legacy era with every client still connected (an SDK session per episode, as an agent mid-task
    holds it), and once they closed (RSS rarely shrinks: freed memory stays with the allocator; the open files
    then include the shared HTTP client's keep-alive connections). Bytes per episode = (RSS after -
    RSS after a warm-up of 30) / episodes; RSS moves in pages and with the allocator's arenas, so small figures
    are rough. Open descriptors of the server are counted too.
"""

from __future__ import annotations

import argparse
import gc
import linecache
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from bench.call_conditions import golden_calls
from bench.processes import TOKEN, http_process, load_average

if TYPE_CHECKING:
    from mcp_hazard.server.served_episode import Episode

REPO = Path(__file__).resolve().parents[1]
WARM_UP = 20
HTTP_WARM_UP = 30


def rss_bytes(pid: int | None = None) -> int:
    for line in Path(f"/proc/{pid or 'self'}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc (Linux only)")


def open_fds(pid: int | None = None) -> int:
    return len(os.listdir(f"/proc/{pid or 'self'}/fd"))


def _kib(value: float) -> str:
    return f"{value / 1024:,.1f} KiB"


# -- (1) in this process, tracemalloc ----------------------------------------------------------------------------------


async def in_process(scenario: Any, task: str, count: int, top: int, trace_dir: Path) -> None:
    from mcp import Client

    from mcp_hazard.condition import Condition
    from mcp_hazard.server.app import build_server
    from mcp_hazard.server.episodes import EpisodeRegistry

    call = golden_calls(scenario, task)[0]
    registry = EpisodeRegistry([scenario], trace_dir, transport="http")
    current: list[str] = [""]

    def resolve(ctx: Any) -> Episode:
        episode = registry.get(current[0])
        assert episode is not None, current[0]  # made by `one` just before its client connects
        return episode

    server = build_server(resolve)

    async def one(seed: int) -> str:
        episode = registry.create(scenario.id, task, Condition(seed=seed))
        current[0] = episode.id
        async with Client(server) as client:
            await client.list_tools()
            result = await client.call_tool(call.tool, call.arguments)
            if result.is_error:
                raise SystemExit(f"{call.tool} failed: {result.content}")
        return episode.id

    for seed in range(WARM_UP):  # imports, caches, the SDK's first connection
        registry.release(await one(seed))
    gc.collect()
    tracemalloc.start(1)
    before, rss_before, fds_before = tracemalloc.take_snapshot(), rss_bytes(), open_fds()
    began = time.perf_counter()
    for seed in range(WARM_UP, WARM_UP + count):
        await one(seed)
    elapsed = time.perf_counter() - began
    gc.collect()
    after, rss_after, fds_after = tracemalloc.take_snapshot(), rss_bytes(), open_fds()
    tracemalloc.stop()
    assert len(registry.episodes) == count
    stats = after.compare_to(before, "lineno")
    total = sum(s.size_diff for s in stats)
    print(f"(1) in process: {count} live episodes of {scenario.id}/{task} in one registry ({elapsed:.1f} s under "
          f"tracemalloc)")  # fmt: skip
    print(f"    traced: {_kib(total / count)} per episode; RSS: {_kib((rss_after - rss_before) / count)} per "
          f"episode; open files: {(fds_after - fds_before) / count:.2f} per episode (the trace file)")  # fmt: skip
    by_file: dict[str, int] = {}
    for stat in stats:
        name = _short(stat.traceback[0].filename)
        by_file[name] = by_file.get(name, 0) + stat.size_diff
    print("    by file (bytes per episode):")
    for name, size in sorted(by_file.items(), key=lambda item: -item[1])[:top]:
        print(f"      {size / count:>9,.0f}  {size / total:5.1%}  {name}")
    print("    by line (bytes per episode):")
    for stat in sorted(stats, key=lambda s: -s.size_diff)[:top]:
        frame = stat.traceback[0]
        code = linecache.getline(frame.filename, frame.lineno).strip()[:70]
        print(f"      {stat.size_diff / count:>9,.0f}  {_short(frame.filename)}:{frame.lineno}  {code}")


def _short(path: str) -> str:
    for marker in ("site-packages/", "mcp_hazard/", "lib/python3"):
        if marker in path:
            start = path.index(marker)
            return path[start + len(marker) :] if marker == "site-packages/" else path[start:]
    return path


# -- (2) real servers over HTTP, RSS -----------------------------------------------------------------------------------


@asynccontextmanager
async def holding(urls: list[str], call: Any, mode: str, http: Any, keep: bool = True) -> AsyncIterator[None]:
    """Connect a client to each URL (16 connecting at a time), list and call once; with `keep`, every client stays
    connected for the body of the `with`, else each closes at once."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    release, finished = anyio.Event(), anyio.Event()
    connecting = anyio.Semaphore(16)
    settled = 0
    failures: list[str] = []

    async def one(url: str) -> None:
        nonlocal settled
        try:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                async with connecting:
                    await client.list_tools()
                    result = await client.call_tool(call.tool, call.arguments)
                if result.is_error:
                    failures.append(f"{call.tool}: {result.content}")
                settled += 1
                if settled == len(urls):
                    finished.set()
                if keep:
                    await release.wait()
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
            settled += 1
            if settled == len(urls):
                finished.set()

    async with anyio.create_task_group() as group:
        for url in urls:
            group.start_soon(one, url)
        await finished.wait()
        if failures:
            release.set()
            raise SystemExit(f"{len(failures)} of {len(urls)} clients failed; first: {failures[0]}")
        try:
            yield
        finally:
            release.set()


def _http_client() -> Any:
    """One HTTP client for every SDK client (no connection limit: each legacy session holds a stream open)."""
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    return httpx2.AsyncClient(timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
                              limits=limits)  # fmt: skip


async def over_http(scenario: Any, task: str, count: int, trace_dir: Path) -> None:
    from mcp_hazard.runner.transports import free_port

    call = golden_calls(scenario, task)[0]
    rows: list[tuple[str, int, int, int]] = []

    def row(name: str, pid: int, start: int, fds: int) -> None:
        time.sleep(0.5)  # let the server finish closing what the clients closed
        rows.append((name, rss_bytes(pid) - start, open_fds(pid) - fds, count))

    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(_http_client())
        port = free_port()
        command = [sys.executable, "-m", "mcp_hazard", "serve", scenario.path, "--http", f"127.0.0.1:{port}",
                   "--trace-dir", str(trace_dir)]  # fmt: skip
        ours = (await stack.enter_async_context(http_process(command, f"http://127.0.0.1:{port}/scenarios"))).pid
        base = f"http://127.0.0.1:{port}/episodes"

        def ours_urls(tag: str, n: int) -> list[str]:
            return [f"{base}/{tag}-{i}/mcp?scenario={scenario.id}&task={task}&seed={i}&token={TOKEN}" for i in range(n)]

        async with holding(ours_urls("warm", HTTP_WARM_UP), call, "legacy", http, keep=False):
            pass
        start, fds = rss_bytes(ours), open_fds(ours)
        async with holding(ours_urls("modern", count), call, "2026-07-28", http, keep=False):
            pass
        row("mcp-hazard, modern era, closed", ours, start, fds)
        start, fds = rss_bytes(ours), open_fds(ours)
        async with holding(ours_urls("open", count), call, "legacy", http):
            row("mcp-hazard, sessions open", ours, start, fds)
        row("mcp-hazard, clients closed", ours, start, fds)

        port = free_port()
        command = [sys.executable, "-m", "bench.bare_server", scenario.path, "--task", task, "--http",
                   f"127.0.0.1:{port}"]  # fmt: skip
        url = f"http://127.0.0.1:{port}/mcp"
        bare = (await stack.enter_async_context(http_process(command, url))).pid
        async with holding([url] * HTTP_WARM_UP, call, "legacy", http, keep=False):
            pass
        start, fds = rss_bytes(bare), open_fds(bare)
        async with holding([url] * count, call, "legacy", http):
            row("bare, sessions open", bare, start, fds)
        row("bare, clients closed", bare, start, fds)
    print(f"(2) over HTTP, server RSS: {count} episodes of {scenario.id}/{task}, each listed and called once")
    print(f"    {'':<32} {'RSS growth':>12} {'per episode':>13} {'open files':>10}")
    for name, grown, fds_grown, n in rows:
        print(f"    {name:<32} {_kib(grown):>12} {_kib(grown / n):>13} {fds_grown / n:>10.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.episode_memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000, help="live episodes in this process (default 1000)")
    parser.add_argument("--http-episodes", type=int, default=300, help="episodes per HTTP measure (default 300)")
    parser.add_argument("--top", type=int, default=12, help="allocation sites to print (default 12)")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP servers")
    parser.add_argument("--scenario", default="scenarios/travel.yaml", help="scenario file (default travel)")
    parser.add_argument("--task", default="fare-class", help="task (default fare-class)")
    args = parser.parse_args(argv)
    if min(args.episodes, args.http_episodes, args.top) < 1:
        parser.error("--episodes, --http-episodes and --top must be positive")

    from mcp_hazard.load import load_scenario
    from mcp_hazard.logs import configure_logging

    configure_logging("warning")
    os.chdir(REPO)
    scenario = load_scenario(args.scenario)
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} ({platform.machine()}, "
          f"{platform.system()}); load average before: {load_average()}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-membench-") as scratch:
        (Path(scratch) / "in-process").mkdir()
        anyio.run(in_process, scenario, args.task, args.episodes, args.top, Path(scratch) / "in-process")
        if not args.no_http:
            print()
            anyio.run(over_http, scenario, args.task, args.http_episodes, Path(scratch) / "http")
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

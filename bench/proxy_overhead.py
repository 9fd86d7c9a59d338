"""Proxy overhead per call: a client calling a real MCP server directly, against the same client calling it through
`mcp-hazard proxy` (clean condition, tracing on), and through AgentBreak (a chaos proxy from the package index, no
faults configured) on the same server.

    .venv/bin/python -m bench.proxy_overhead                        # every comparison, 300 calls x 5 rounds
    .venv/bin/python -m bench.proxy_overhead --only stdio --calls 500 --rounds 7

stdio: the client starts the server (direct) or `mcp-hazard proxy --upstream-cmd SERVER` (proxied) as a subprocess;
the servers are the Python reference time server (`convert_time`) and the npm everything server (`echo`).
http: the everything server's own Streamable HTTP transport; the client reaches it directly, through
`mcp-hazard proxy --upstream-url ... --http`, and through `agentbreak serve` (MCP proxy mode, an empty scenario
list). AgentBreak is installed into .cache/agentbreak (its own virtualenv) if missing.

Every path runs in this process, rounds interleaved (direct, proxy, agentbreak, direct, ...), each on a connection
opened before timing; the best round's mean time per call counts. Ratio = path / direct (1.00 = no overhead).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, StdioServerParameters

from bench.processes import OPERATOR, stop

ROOT = Path(__file__).resolve().parents[1]
NPM = ROOT / ".cache" / "upstream-npm" / "node_modules" / ".bin"
AGENTBREAK_VENV = ROOT / ".cache" / "agentbreak"
TIME_CALL = ("convert_time", {"source_timezone": "Etc/UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
ECHO_CALL = ("echo", {"message": "hello"})

Opener = Callable[[], Any]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"bench: {url} did not answer within {seconds:g}s")


@contextlib.contextmanager
def _process(command: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
             ) -> Iterator[subprocess.Popen[bytes]]:  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env, cwd=cwd)
    try:
        yield process
    finally:
        stop(process, timeout=10)


async def _calls(opener: Opener, call: tuple[str, dict[str, Any]], count: int) -> float:
    """Mean seconds per call over `count` calls on one connection (one warm-up call first)."""
    async with opener() as client:
        await client.call_tool(*call)
        started = time.perf_counter()
        for _ in range(count):
            result = await client.call_tool(*call)
            if result.is_error:
                raise SystemExit(f"bench: a call failed: {result.content}")
        return (time.perf_counter() - started) / count


def _compare(paths: dict[str, Opener], call: tuple[str, dict[str, Any]], calls: int, rounds: int) -> dict[str, float]:
    best: dict[str, float] = {}

    async def run() -> None:
        for _ in range(rounds):
            for name, opener in paths.items():
                seconds = await _calls(opener, call, calls)
                best[name] = min(best.get(name, seconds), seconds)

    anyio.run(run)
    return best


def _stdio(command: list[str]) -> Opener:
    return lambda: Client(StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT)))


def _proxied(upstream: list[str], traces: Path) -> Opener:
    counter = iter(range(1_000_000))

    def open_() -> Any:
        command = [sys.executable, "-m", "mcp_hazard", "proxy", "--upstream-cmd", " ".join(upstream),
                   "--trace-dir", str(traces), "--episode-id", f"bench-{time.time_ns()}-{next(counter)}"]  # fmt: skip
        return _stdio(command)()

    return open_


def stdio_rows(calls: int, rounds: int, work: Path) -> list[tuple[str, str, float, float]]:
    rows = []
    servers = {"time (Python)": ([sys.executable, "-m", "mcp_server_time"], TIME_CALL)}
    if (NPM / "mcp-server-everything").exists():
        servers["everything (Node)"] = ([str(NPM / "mcp-server-everything")], ECHO_CALL)
    for label, (server, call) in servers.items():
        best = _compare({"direct": _stdio(server), "mcp-hazard": _proxied(server, work / "traces")}, call, calls,
                        rounds)  # fmt: skip
        rows.append((f"stdio, {label}", "mcp-hazard proxy", best["direct"], best["mcp-hazard"]))
    return rows


def _agentbreak() -> Path | None:
    binary = AGENTBREAK_VENV / "bin" / "agentbreak"
    if binary.exists():
        return binary
    print("bench: installing agentbreak into .cache/agentbreak", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(AGENTBREAK_VENV)], check=True)
    done = subprocess.run([str(AGENTBREAK_VENV / "bin" / "pip"), "install", "-q", "agentbreak"], check=False)
    return binary if done.returncode == 0 and binary.exists() else None


def http_rows(calls: int, rounds: int, work: Path) -> list[tuple[str, str, float, float]]:
    everything = NPM / "mcp-server-everything"
    if not everything.exists():
        print(
            "bench: no everything server in .cache/upstream-npm; run .ci/run or the proxy tests first", file=sys.stderr
        )
        return []
    up_port, hz_port, ab_port = _port(), _port(), _port()
    upstream = f"http://127.0.0.1:{up_port}/mcp"
    rows = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(_process([str(everything), "streamableHttp"], work / "everything.log",
                                     env={**os.environ, "PORT": str(up_port)}))  # fmt: skip
        _wait_http(upstream)
        stack.enter_context(_process(
            [sys.executable, "-m", "mcp_hazard", "proxy", "--upstream-url", upstream, "--http", f"127.0.0.1:{hz_port}",
             "--trace-dir", str(work / "http-traces")], work / "proxy.log",
        ))  # fmt: skip
        _wait_http(f"http://127.0.0.1:{hz_port}/scenarios")
        paths: dict[str, Opener] = {"direct": lambda: Client(upstream)}

        def hazard_client() -> Any:
            created = httpx.post(f"http://127.0.0.1:{hz_port}/episodes", json={}, headers=OPERATOR, timeout=30)
            created.raise_for_status()
            return Client(created.json()["mcp_url"])

        paths["mcp-hazard"] = hazard_client
        binary = _agentbreak()
        if binary is not None:
            folder = work / "agentbreak"
            folder.mkdir()
            (folder / "application.yaml").write_text(
                "llm:\n  enabled: false\nmcp:\n  enabled: true\n  mode: proxy\n"
                f"  upstream_url: {upstream}\nserve:\n  host: 127.0.0.1\n  port: {ab_port}\n",
                encoding="utf-8",
            )
            (folder / "scenarios.yaml").write_text("version: 1\nscenarios: []\n", encoding="utf-8")
            config = ["--config", str(folder / "application.yaml"), "--registry", str(folder / "registry.json")]
            subprocess.run([str(binary), "inspect", *config], cwd=folder, check=True, capture_output=True)
            stack.enter_context(_process([str(binary), "serve", *config, "--scenarios", str(folder / "scenarios.yaml")],
                                         work / "agentbreak.log", cwd=folder))  # fmt: skip
            _wait_http(f"http://127.0.0.1:{ab_port}/_agentbreak/scorecard")
            paths["agentbreak"] = lambda: Client(f"http://127.0.0.1:{ab_port}/mcp", mode="legacy")
        best = _compare(paths, ECHO_CALL, calls, rounds)
        rows.append(("http, everything (Node)", "mcp-hazard proxy", best["direct"], best["mcp-hazard"]))
        if "agentbreak" in best:
            rows.append(("http, everything (Node)", "agentbreak serve", best["direct"], best["agentbreak"]))
            rows.append(("http, everything (Node)", "mcp-hazard vs agentbreak", best["agentbreak"], best["mcp-hazard"]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.proxy_overhead", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["stdio", "http"])
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    try:
        rows: list[tuple[str, str, float, float]] = []
        if args.only in (None, "stdio"):
            rows += stdio_rows(args.calls, args.rounds, work)
        if args.only in (None, "http"):
            rows += http_rows(args.calls, args.rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.calls} calls x {args.rounds} rounds, best round; ratio = path / baseline")
    print(f"{'server':<26} {'path':<26} {'baseline ms':>11} {'path ms':>8} {'ratio':>6}")
    for server, path, base, seconds in rows:
        print(f"{server:<26} {path:<26} {base * 1000:>11.3f} {seconds * 1000:>8.3f} {seconds / base:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

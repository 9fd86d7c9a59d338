"""The server processes a bench starts and watches: started and awaited over HTTP, their CPU read from /proc, the
stdio servers an SDK client spawned found among this process's children, and the machine's load for the record.

The HTTP servers a bench starts take their control token from $MCP_HAZARD_TOKEN, set here once per bench run (and so
inherited by every server and client process it starts); `OPERATOR` is the header of the bench's own control-plane
requests, and lazy-creation URLs add `token=TOKEN`."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

REPO = Path(__file__).resolve().parents[1]
TOKEN = os.environ.setdefault("MCP_HAZARD_TOKEN", secrets.token_urlsafe(24))
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


def cpu_of(pid: int | None) -> float | None:
    """User + system CPU seconds of a process and all its threads, from /proc (Linux; 10 ms ticks)."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children() -> set[int]:
    """This process's child processes (Linux), to find the stdio servers the SDK client spawned."""
    found = set()
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                if int(stat[stat.rindex(")") + 2 :].split()[1]) == me:
                    found.add(int(entry.name))
    return found


async def wait_http(url: str, process: subprocess.Popen[bytes], log: Any) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        with anyio.fail_after(60):
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    said = log.read().decode("utf-8", "replace")[-2000:]
                    args = process.args
                    command = str(args) if isinstance(args, str | bytes | os.PathLike) else " ".join(map(str, args))
                    raise SystemExit(f"server exited with {process.returncode}: {command}\n{said}")
                try:
                    await http.get(url)
                    return
                except httpx.TransportError:
                    await anyio.sleep(0.05)


@asynccontextmanager
async def http_process(command: list[str], ready_url: str) -> AsyncIterator[subprocess.Popen[bytes]]:
    """A server subprocess (its stderr kept in a temp file, shown if it dies early), ready when `ready_url` answers."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            await wait_http(ready_url, process, log)
            yield process
        finally:
            stop(process, timeout=20)


def stop(process: subprocess.Popen[bytes], how: int = signal.SIGTERM, timeout: float = 20) -> None:
    """Ask a server to stop (`how`: SIGINT lets one under callgrind write its counts), then kill it if it will not."""
    process.send_signal(how)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"

"""A serving process sets its start-up heap aside from the garbage collector (server/heap.py), once, and serves
as before: checked in real `serve` processes over stdio and HTTP, through the SDK client."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from mcp_hazard.server import heap
from tests.conftest import REPO_ROOT, SERVER_START_TIMEOUT, TEST_TOKEN, TRAVEL, WAIT_S, HttpServer, free_port

pytestmark = pytest.mark.anyio

# `mcp-hazard ARGS` with `freeze_start_up` watched (`python -c WATCHED REPORT ARGS...`): REPORT says how many objects
# the collector stopped walking after the first call, and again after a second call (which must change nothing).
WATCHED = """
import gc, sys
import mcp_hazard.server.heap as heap
real = heap.freeze_start_up
def watched():
    real()
    first = gc.get_freeze_count()
    real()
    with open(sys.argv[1], "w") as report:
        report.write(f"frozen {first} then {gc.get_freeze_count()}")
heap.freeze_start_up = watched
from mcp_hazard.cli import main
sys.exit(main(sys.argv[2:]))
"""
FROZEN = re.compile(r"frozen (\d+) then (\d+)")
START_UP_OBJECTS = 20_000  # what a server holds once built is in the tens of thousands; a frozen empty heap is not


def _frozen(report: Path) -> tuple[int, int]:
    found = FROZEN.fullmatch(report.read_text()) if report.exists() else None
    assert found is not None, "freeze_start_up was not called before serving"
    return int(found.group(1)), int(found.group(2))


async def test_stdio_server_freezes_its_start_up_heap_once_and_serves(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", WATCHED, str(report), "serve", str(TRAVEL), "--task", "fare-class", "--trace-dir", str(tmp_path)],
        cwd=str(REPO_ROOT),
    )
    with anyio.fail_after(WAIT_S):
        async with Client(params) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("get_fare", {"flight_id": "AU-426"})
    assert "get_fare" in listed
    assert not result.is_error and result.structured_content == {
        "flight_id": "AU-426",
        "price_eur": 167.0,
        "fare_class": "Standard",
    }
    first, second = _frozen(report)
    assert first > START_UP_OBJECTS
    assert second == first


def test_http_server_freezes_its_start_up_heap_once_and_serves(tmp_path: Path) -> None:
    port = free_port()
    errors, report = tmp_path / "stderr.txt", tmp_path / "report.txt"
    command = [sys.executable, "-c", WATCHED, str(report), "serve", str(TRAVEL), "--http", f"127.0.0.1:{port}",
               "--trace-dir", str(tmp_path / "traces"), "--token", TEST_TOKEN]  # fmt: skip
    with errors.open("wb") as errlog:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stderr=errlog)
    server = HttpServer(process, port, tmp_path / "traces", errors)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while process.poll() is None and time.monotonic() < deadline:
            try:
                body = {"scenario": "travel", "task": "fare-class"}
                created = httpx.post(f"{server.base_url}/episodes", json=body, headers=server.auth)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise AssertionError(f"the server did not answer:\n{server.stderr()}")
        assert created.status_code == 201, created.text
    finally:
        server.stop()
    first, second = _frozen(report)
    assert first > START_UP_OBJECTS
    assert second == first


def test_freeze_happens_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[None] = []
    monkeypatch.setattr(heap, "_frozen", False)
    monkeypatch.setattr(heap.gc, "freeze", lambda: calls.append(None))
    heap.freeze_start_up()
    heap.freeze_start_up()
    assert len(calls) == 1

"""An existing trace is never appended to or overwritten: reusing an episode id whose trace is on disk (after a
restart, or from stdio) is refused with one line (HTTP 409), and the old file keeps every byte."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import httpx
import pytest
from conftest import WAIT_S, run_main, start_http_server
from mcp import Client

from mcp_hazard.server.served_episode import SUBMIT_TOOL
from mcp_hazard.trace import events as ev
from mcp_hazard.trace.writer import TraceWriter

from .http_support import TRAVEL

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


async def test_reusing_an_id_after_a_restart_is_refused_and_the_old_trace_is_untouched(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    first = start_http_server(traces, tmp_path / "logs")
    try:
        with anyio.fail_after(WAIT_S):
            async with httpx.AsyncClient(timeout=WAIT_S, headers=first.auth) as http:
                body = {"scenario": "travel", "task": "fare-class", "seed": 3, "episode_id": "kept-1"}
                created = (await http.post(f"{first.base_url}/episodes", json=body)).json()
                unused = await http.post(f"{first.base_url}/episodes", json={**body, "episode_id": "unused-1"})
                assert unused.status_code == 201
            async with Client(created["mcp_url"], mode="legacy") as client:
                await client.call_tool("get_fare", {"flight_id": "AU-426"})
                await client.call_tool(SUBMIT_TOOL, {"answer": "Standard"})
    finally:
        first.stop(signal.SIGTERM)
    kept = (traces / "kept-1.jsonl").read_bytes()
    assert not (traces / "unused-1.jsonl").exists()

    second = start_http_server(traces, tmp_path / "logs")
    try:
        with anyio.fail_after(WAIT_S):
            async with httpx.AsyncClient(timeout=WAIT_S, headers=second.auth) as http:
                base = second.base_url
                again = await http.post(f"{base}/episodes", json=body)
                lazy = await http.post(
                    second.lazy_url("kept-1", "scenario=travel&task=fare-class&seed=3"),
                    headers=MCP_HEADERS,
                    json=INITIALIZE,
                )
                shown = await http.get(f"{base}/episodes/kept-1")
                plain = await http.post(f"{base}/episodes/kept-1/mcp", headers=MCP_HEADERS, json=INITIALIZE)
                reused = await http.post(f"{base}/episodes", json={**body, "episode_id": "unused-1"})
            for response in (again, lazy):
                assert response.status_code == 409, response.text
                message = response.json()["error"]
                assert "kept-1" in message and "never appended to or overwritten" in message and "\n" not in message
            assert shown.status_code == 410 and plain.status_code == 410
            assert reused.status_code == 201, "an id that never wrote a trace can be used again"
            async with Client(reused.json()["mcp_url"], mode="2026-07-28") as client:
                await client.call_tool(SUBMIT_TOOL, {"answer": "Standard"})
    finally:
        second.stop(signal.SIGTERM)
    assert (traces / "kept-1.jsonl").read_bytes() == kept
    assert sorted(p.name for p in traces.iterdir()) == ["kept-1.jsonl", "unused-1.jsonl"]
    assert "Traceback" not in second.stderr()


def test_stdio_serve_refuses_an_id_whose_trace_exists(tmp_path: Path) -> None:
    old = tmp_path / "kept-2.jsonl"
    old.write_text('{"seq":0,"type":"episode_started"}\n', encoding="utf-8")
    before = old.read_bytes()
    result = run_main("serve", str(TRAVEL), "--trace-dir", str(tmp_path), "--episode-id", "kept-2")  # refused at once
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "kept-2" in lines[0] and "already has a trace" in lines[0], result.stderr
    assert old.read_bytes() == before


def test_the_writer_never_opens_an_existing_file(tmp_path: Path) -> None:
    """The last guard, for a file another process creates after the registry looked: a numbered sibling instead."""
    path = tmp_path / "race.jsonl"
    writer = TraceWriter(path)
    path.write_text("someone else's\n", encoding="utf-8")
    writer.write(ev.TaskRead, via="prompt")
    writer.close()
    writer.write(ev.TaskRead, via="resource")  # after close: appended to its own file, not to the other one
    assert path.read_text(encoding="utf-8") == "someone else's\n"
    assert writer.path == tmp_path / "race-2.jsonl"
    assert len(writer.path.read_text(encoding="utf-8").splitlines()) == 2
    assert not (tmp_path / "race-3.jsonl").exists()

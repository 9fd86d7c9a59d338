"""Episodes are released from memory after the TTL (traces stay on disk), listings are paginated, and the registry
stays bounded over hundreds of episodes: real uvicorn on 127.0.0.1, real SDK clients, a hand-moved monotonic clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from conftest import WAIT_S
from mcp import Client

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.load import load_scenario
from mcp_hazard.server.episodes import SESSIONS_PER_EPISODE
from mcp_hazard.server.served_episode import SUBMIT_TOOL

from .http_support import OPERATOR, TRAVEL, StepClock, serving, travel_registry

pytestmark = pytest.mark.anyio

DEADLINE = WAIT_S
TTL = 600.0
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def _create(http: httpx.AsyncClient, base: str, **fields: Any) -> dict[str, Any]:
    response = await http.post(f"{base}/episodes", json={"scenario": "travel", "task": "fare-class", **fields})
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _listed(http: httpx.AsyncClient, base: str) -> set[str]:
    """GET /episodes (which also sweeps), every page."""
    ids: set[str] = set()
    cursor: str | None = None
    while True:
        page = await http.get(f"{base}/episodes", params={"limit": 1000, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        ids.update(e["episode_id"] for e in page.json()["episodes"])
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return ids


async def test_ended_and_idle_episodes_are_released_and_their_ids_answer_410(tmp_path: Path) -> None:
    clock = StepClock()
    registry = travel_registry(tmp_path, ttl=TTL, clock=clock)
    task = load_scenario(TRAVEL).model.task("fare-class")
    assert task is not None
    with anyio.fail_after(DEADLINE):
        async with serving(registry) as base, httpx.AsyncClient(timeout=WAIT_S, headers=OPERATOR) as http:
            ended = await _create(http, base, episode_id="ended-1")
            idle = await _create(http, base, episode_id="idle-1")
            await _create(http, base, episode_id="never-1")
            busy = await _create(http, base, episode_id="busy-1")
            async with Client(ended["mcp_url"], mode="legacy") as client:
                await run_golden_agent(client, task)
            # the idle agent opens a legacy session, makes one call and vanishes without DELETE
            opened = await http.post(idle["mcp_url"], headers=MCP_HEADERS, json=INITIALIZE)
            session = opened.headers["mcp-session-id"]
            headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(idle["mcp_url"], headers=headers, json=initialized)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "get_fare", "arguments": {"flight_id": "AU-426"}}}  # fmt: skip
            assert (await http.post(idle["mcp_url"], headers=headers, json=call)).status_code == 200
            assert registry.sessions == {session: "idle-1"}
            kept = (tmp_path / "ended-1.jsonl").read_bytes()

            clock.advance(59)
            assert await _listed(http, base) == {"ended-1", "idle-1", "never-1", "busy-1"}
            clock.advance(2)  # 61 s: an ended episode is released after min(TTL, 60 s)
            assert await _listed(http, base) == {"idle-1", "never-1", "busy-1"}
            gone = await http.get(f"{base}/episodes/ended-1")
            assert gone.status_code == 410 and "\n" not in gone.json()["error"], gone.text
            assert (await http.post(ended["mcp_url"], headers=MCP_HEADERS, json=INITIALIZE)).status_code == 410

            clock.advance(TTL / 2)
            async with Client(busy["mcp_url"], mode="2026-07-28") as client:  # activity keeps an episode alive
                await client.list_tools()
            clock.advance(TTL / 2)  # idle-1 and never-1: TTL + 61 s without a request; busy-1: TTL / 2
            assert await _listed(http, base) == {"busy-1"}
            assert (await http.get(f"{base}/episodes/idle-1")).status_code == 410
            assert (await http.get(f"{base}/episodes/never-1")).status_code == 410  # never joined, and on disk
            assert registry.sessions == {} and registry.sessions_of == {}, "the session map is cleaned too"
            assert (await http.post(idle["mcp_url"], headers=headers, json=call)).status_code == 410
            assert (await http.get(f"{base}/episodes/busy-1")).json()["ended"] is False
    assert (tmp_path / "ended-1.jsonl").read_bytes() == kept, "a released episode's trace is left as it was"
    idle_events = _events(tmp_path / "idle-1.jsonl")
    assert idle_events[-1]["type"] == "episode_ended" and idle_events[-1]["reason"] == "disconnected"
    assert sum(1 for e in idle_events if e["type"] == "tool_called") == 1
    never = _events(tmp_path / "never-1.jsonl")  # no client joined: the trace still says so
    assert [e["type"] for e in never] == ["episode_started", "episode_ended"]
    assert (never[0]["protocol_version"], never[-1]["reason"]) == ("none", "never_connected")
    assert registry.released == 3


async def test_an_episode_keeps_its_most_recently_used_sessions_and_closes_the_rest(tmp_path: Path) -> None:
    """An agent that opens session after session and closes none (its key is all it needs): the episode keeps the
    32 it used last, and each older one is closed as if it had gone idle (`Session not found`). Unbounded, one such
    agent filled the SDK's 10,000 sessions (456 MiB) in 25 s, and then no episode on the server could open one."""
    registry = travel_registry(tmp_path, ttl=TTL)
    opened: list[str] = []
    with anyio.fail_after(DEADLINE):
        async with serving(registry) as base, httpx.AsyncClient(timeout=WAIT_S, headers=OPERATOR) as http:
            hoarder = (await _create(http, base, episode_id="hoarder-1"))["mcp_url"]
            other = (await _create(http, base, episode_id="other-1"))["mcp_url"]

            async def listed(session: str) -> int:
                headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
                request = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
                return (await http.post(hoarder, headers=headers, json=request)).status_code

            for number in range(SESSIONS_PER_EPISODE + 8):
                answer = await http.post(hoarder, headers=MCP_HEADERS, json=INITIALIZE)
                assert answer.status_code == 200, answer.text
                opened.append(answer.headers["mcp-session-id"])
                if number == SESSIONS_PER_EPISODE - 1:  # the first session is used again, before it is the oldest
                    assert await listed(opened[0]) == 200
            assert len(registry.sessions_of["hoarder-1"]) == SESSIONS_PER_EPISODE
            statuses = [await listed(session) for session in opened]
            assert statuses == [200] + [404] * 8 + [200] * (SESSIONS_PER_EPISODE - 1), statuses
            assert (await http.post(other, headers=MCP_HEADERS, json=INITIALIZE)).status_code == 200
    assert set(registry.sessions) == {*opened[:1], *opened[9:]} | set(registry.sessions_of.get("other-1", {}))


async def test_listing_is_paginated_in_creation_order(tmp_path: Path) -> None:
    registry = travel_registry(tmp_path, ttl=None)
    with anyio.fail_after(DEADLINE):
        async with serving(registry) as base, httpx.AsyncClient(timeout=WAIT_S, headers=OPERATOR) as http:
            made = [(await _create(http, base, seed=n))["episode_id"] for n in range(25)]
            pages: list[list[str]] = []
            cursor: str | None = None
            while True:
                params: dict[str, Any] = {"limit": 10, **({"cursor": cursor} if cursor else {})}
                page = (await http.get(f"{base}/episodes", params=params)).json()
                pages.append([e["episode_id"] for e in page["episodes"]])
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            default = (await http.get(f"{base}/episodes")).json()
            huge = (await http.get(f"{base}/episodes", params={"limit": 999_999})).json()
            bad = {
                value: await http.get(f"{base}/episodes", params=value)
                for value in ("limit=0", "limit=-1", "limit=ten", "limit=1.5", "limit=", "cursor=abc", "cursor=-1")
            }
    assert [len(p) for p in pages] == [10, 10, 5]
    assert [i for p in pages for i in p] == made
    assert len(default["episodes"]) == 25 and default["next_cursor"] is None
    assert len(huge["episodes"]) == 25
    for value, response in bad.items():
        assert response.status_code == 400, (value, response.text)
        assert "\n" not in response.json()["error"]


BATCH = 25  # episodes between two sweeps (a minute of fake time)
EPISODES = 4 * BATCH


async def test_a_hundred_episodes_keep_the_registry_bounded(tmp_path: Path) -> None:
    """The short soak (bench/soak.py runs 10,000): create, list tools, call, answer, leave; every 25 episodes a
    minute of (fake) time passes, four times over. The registry and the session map never hold more than the last 25
    episodes plus nothing else, and after the TTL both are empty while all 100 traces are on disk, each ended once."""
    clock = StepClock()
    registry = travel_registry(tmp_path, ttl=TTL, clock=clock)
    held: list[int] = []
    sessions: list[int] = []
    with anyio.fail_after(DEADLINE * 3):
        async with serving(registry) as base, httpx.AsyncClient(timeout=WAIT_S, headers=OPERATOR) as http:
            for n in range(EPISODES):
                created = await _create(http, base, seed=n % 7)
                async with Client(created["mcp_url"], mode="legacy" if n % 2 else "2026-07-28") as client:
                    await client.list_tools()
                    await client.call_tool("get_fare", {"flight_id": "AU-426"})
                    await client.call_tool(SUBMIT_TOOL, {"answer": "Standard"})
                held.append(len(registry.episodes))
                sessions.append(len(registry.sessions))
                if n % BATCH == BATCH - 1:
                    clock.advance(61)
                    await _listed(http, base)
            clock.advance(61)
            assert await _listed(http, base) == set()
    assert max(held) <= BATCH, max(held)
    assert max(sessions) <= 1, "the SDK client closes its session; the map forgets it at once"
    assert registry.episodes == {} and registry.sessions == {} and registry.last_seen == {} and registry.order == {}
    assert registry.created == EPISODES and registry.released == EPISODES
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert len(traces) == EPISODES
    for trace in traces:
        ends = [e["reason"] for e in _events(trace) if e["type"] == "episode_ended"]
        assert ends == ["answered"], trace

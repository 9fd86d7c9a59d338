"""`mcp-hazard serve scenarios --http 127.0.0.1:PORT` as a real subprocess, driven by real SDK clients over HTTP.

Many episodes share the one server process; each lives at `/episodes/{id}/mcp` and keeps its own trace.
"""

from __future__ import annotations

import contextlib
import json
import signal
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
from conftest import WAIT_S
from mcp import Client

from mcp_hazard.agents.golden import AgentReport, run_golden_agent
from mcp_hazard.load import load_scenarios
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.server.served_episode import SUBMIT_TOOL

from .support import (
    LEGACY_PROTOCOL,
    MODERN_PROTOCOL,
    SCENARIOS_DIR,
    calls,
    golden_calls,
    strict_events,
    text_of,
    wait_for_trace_end,
)

if TYPE_CHECKING:
    from conftest import HttpServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

DEADLINE = WAIT_S
PROTOCOL_OF_MODE = {"legacy": LEGACY_PROTOCOL, "2026-07-28": MODERN_PROTOCOL, "auto": MODERN_PROTOCOL}
EPISODE_EVENTS = {"episode_started", "tools_listed", "task_read", "tool_called", "answer_submitted", "episode_ended"}


@pytest.fixture(scope="module")
def scenarios() -> list[LoadedScenario]:
    """What the server loads from scenarios/ (loaded here too, to know the tasks and their golden paths)."""
    return load_scenarios([SCENARIOS_DIR])


async def create_episode(server: HttpServer, **payload: Any) -> dict[str, Any]:
    """POST /episodes; the answer is agent-facing (no trace path), so the trace path is added from the trace dir."""
    async with httpx.AsyncClient(timeout=WAIT_S, headers=server.auth) as http:
        response = await http.post(f"{server.base_url}/episodes", json=payload)
    assert response.status_code == 201, response.text
    created = dict(response.json())
    assert "trace" not in created and "condition" not in created
    return {**created, "trace": str(server.trace_dir / f"{created['episode_id']}.jsonl")}


# -- many concurrent episodes in both eras ----------------------------------------------------------------------------


@dataclass
class Ran:
    scenario: LoadedScenario
    task: Task
    seed: int
    mode: str
    created: dict[str, Any]
    report: AgentReport
    protocol: str


async def test_concurrent_episodes_in_both_eras_stay_isolated(
    http_server: HttpServer, scenarios: list[LoadedScenario]
) -> None:
    """16 legacy-era and 16 modern-era episodes (12 pinned to 2026-07-28, 4 negotiated with mode='auto') at once,
    over every task of every scenario: each reaches its canonical answer and its trace holds only its own calls."""
    tasks = [(scenario, task) for scenario in scenarios for task in scenario.model.tasks]
    modes = ["legacy"] * 16 + ["2026-07-28"] * 12 + ["auto"] * 4
    ran: dict[int, Ran] = {}

    async def one(index: int, mode: str) -> None:
        scenario, task = tasks[index % len(tasks)]
        seed = 1000 + index
        created = await create_episode(http_server, scenario=scenario.id, task=task.id, seed=seed)
        async with Client(created["mcp_url"], mode=mode) as client:
            report = await run_golden_agent(client, task)
            protocol = client.protocol_version
        ran[index] = Ran(scenario, task, seed, mode, created, report, protocol)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            for index, mode in enumerate(modes):
                group.start_soon(one, index, mode)

    assert len(ran) == len(modes)
    ids = {r.created["episode_id"] for r in ran.values()}
    assert len(ids) == len(modes), "every episode must get its own id"
    for index, r in sorted(ran.items()):
        label = f"episode {index} ({r.mode}, {r.scenario.id}/{r.task.id})"
        assert r.report.notes == [], label
        assert answer_matches(r.task.answer, r.report.answer), (label, r.report.answer, r.task.answer.value)
        assert r.protocol == PROTOCOL_OF_MODE[r.mode], label
        events = wait_for_trace_end(Path(r.created["trace"]))
        started = events[0]
        assert started["type"] == "episode_started", label
        assert started["protocol_version"] == PROTOCOL_OF_MODE[r.mode], label
        assert started["run"] == {"episode_id": r.created["episode_id"], "transport": "http", "agent": None}, label
        assert started["scenario"]["id"] == r.scenario.id, label
        assert started["task"] == r.task.id, label
        assert started["condition"]["seed"] == r.seed, label
        assert {e["type"] for e in events} <= EPISODE_EVENTS, label
        assert [(c["tool"], c["arguments"]) for c in calls(events)] == golden_calls(r.scenario, r.task), label
        assert all(c["outcome"] == "ok" for c in calls(events)), label
        assert [e["answer"] for e in events if e["type"] == "answer_submitted"] == [r.report.answer], label
        assert events[-1]["reason"] == "answered", label
        assert [e["seq"] for e in events] == list(range(len(events))), label


async def test_one_megabyte_argument_over_http_is_answered_and_the_episode_goes_on(http_server: HttpServer) -> None:
    created = await create_episode(http_server, scenario="travel", task="fare-class", seed=0)
    with anyio.fail_after(DEADLINE):
        async with Client(created["mcp_url"], mode="legacy") as client:
            big = await client.call_tool("get_fare", {"flight_id": "AU-" + "4" * 1_000_000})
            fare = await client.call_tool("get_fare", {"flight_id": "AU-426"})
            await client.call_tool(SUBMIT_TOOL, {"answer": "Standard"})
    assert big.is_error is True
    assert "flight_id" in text_of(big)
    assert fare.structured_content is not None and fare.structured_content["fare_class"] == "Standard"
    lines = Path(created["trace"]).read_text(encoding="utf-8").splitlines()
    assert max(len(line) for line in lines) < 100_000


# -- the episode API ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        pytest.param({"scenario": "atlantis", "task": "x", "seed": 1}, "atlantis", id="unknown-scenario"),
        pytest.param({"scenario": "travel", "task": "no-such-task", "seed": 1}, "no-such-task", id="unknown-task"),
        pytest.param({"scenario": "travel", "task": "fare-class", "seed": -1}, "seed", id="negative-seed"),
        pytest.param({"scenario": "travel", "task": "fare-class", "seed": "seven"}, "seed", id="text-seed"),
        pytest.param({"scenario": "travel", "task": "fare-class", "seed": 2**64}, "seed", id="huge-seed"),
        pytest.param({"scenario": "travel", "task": "fare-class", "seed": 1.5}, "seed", id="fractional-seed"),
        pytest.param({"scenario": "travel", "task": "fare-class", "sede": 1}, "sede", id="misspelt-field"),
        pytest.param(
            {"scenario": "travel", "task": "fare-class", "episode_id": "../../etc"}, "episode id", id="bad-episode-id"
        ),
        pytest.param(["travel", "fare-class"], "object", id="json-array"),
    ],
)
async def test_post_episodes_rejects_bad_requests_with_a_json_message(
    http_server: HttpServer, body: Any, needle: str
) -> None:
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        response = await http.post(f"{http_server.base_url}/episodes", json=body)
        listed = await http.get(f"{http_server.base_url}/episodes")
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()["error"]
    assert isinstance(message, str) and needle in message, message
    assert "\n" not in message
    assert "Traceback" not in response.text
    assert listed.status_code == 200


@pytest.mark.parametrize(
    "body", [b"{not json", b"\xff\xfe", b'{"scenario": "travel",'], ids=["garbage", "binary", "cut"]
)
async def test_post_episodes_rejects_a_body_that_is_not_json(http_server: HttpServer, body: bytes) -> None:
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        response = await http.post(
            f"{http_server.base_url}/episodes", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert "JSON" in response.json()["error"]


async def test_post_episodes_rejects_a_duplicate_episode_id(http_server: HttpServer) -> None:
    await create_episode(http_server, scenario="travel", task="fare-class", episode_id="dup-1")
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        response = await http.post(
            f"{http_server.base_url}/episodes", json={"scenario": "travel", "task": "fare-class", "episode_id": "dup-1"}
        )
    assert response.status_code in (400, 409), response.text
    assert "dup-1" in response.json()["error"]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_unknown_episode_path_is_404(http_server: HttpServer, method: str) -> None:
    """To the operator (the control token), a 404 that names the id; docs/security.md covers what others get."""
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        response = await http.request(
            method,
            f"{http_server.base_url}/episodes/never-created/mcp",
            headers=MCP_HEADERS,
            content=json.dumps(INITIALIZE) if method == "POST" else None,
        )
        shown = await http.get(f"{http_server.base_url}/episodes/never-created")
    assert response.status_code == 404, response.text
    assert "never-created" in response.json()["error"]
    assert shown.status_code == 404
    assert "never-created" in shown.json()["error"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_episode_is_created_lazily_from_the_query_string(
    http_server: HttpServer, scenarios: list[LoadedScenario], mode: str
) -> None:
    episode_id = f"lazy-{mode}"
    travel = next(s for s in scenarios if s.id == "travel")
    task = travel.model.task("two-nights")
    assert task is not None
    url = http_server.lazy_url(episode_id, "scenario=travel&task=two-nights&seed=9")
    with anyio.fail_after(DEADLINE):
        async with Client(url, mode=mode) as client:
            report = await run_golden_agent(client, task)
    assert answer_matches(task.answer, report.answer)
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        shown = (await http.get(f"{http_server.base_url}/episodes/{episode_id}")).json()
    assert shown["episode_id"] == episode_id
    assert (shown["scenario"], shown["task"]) == ("travel", "two-nights")
    assert "condition" not in shown and "trace" not in shown
    assert shown["answered"] is True and shown["ended"] is True
    assert f"/episodes/{episode_id}/mcp?key=" in shown["mcp_url"]
    events = wait_for_trace_end(http_server.trace_dir / f"{episode_id}.jsonl")
    assert events[0]["protocol_version"] == PROTOCOL_OF_MODE[mode]
    assert events[0]["task"] == "two-nights" and events[0]["condition"]["seed"] == 9
    assert [(c["tool"], c["arguments"]) for c in calls(events)] == golden_calls(travel, task)


@pytest.mark.parametrize(
    ("query", "status", "needle"),
    [
        pytest.param("scenario=atlantis&task=x", 400, "atlantis", id="unknown-scenario"),
        pytest.param("scenario=travel&task=fare-class&seed=-4", 400, "seed", id="negative-seed"),
        pytest.param("scenario=travel&task=fare-class&seed=abc", 400, "seed", id="text-seed"),
        pytest.param("scenario=travel&task=nope", 400, "nope", id="unknown-task"),
    ],
)
async def test_lazy_creation_with_a_bad_query_is_400(
    http_server: HttpServer, query: str, status: int, needle: str
) -> None:
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        response = await http.post(http_server.lazy_url("lazy-bad", query), headers=MCP_HEADERS, json=INITIALIZE)
        shown = await http.get(f"{http_server.base_url}/episodes/lazy-bad")
    assert response.status_code == status, response.text
    assert needle in response.json()["error"]
    assert shown.status_code == 404, "a rejected lazy creation must not leave an episode behind"


async def test_get_episodes_lists_created_episodes(http_server: HttpServer) -> None:
    first = await create_episode(http_server, scenario="travel", task="fare-class", seed=3)
    second = await create_episode(http_server, scenario="travel", task="cheapest-trip", seed=4)
    async with Client(first["mcp_url"], mode="legacy") as client:
        await client.call_tool(SUBMIT_TOOL, {"answer": "Standard"})
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        response = await http.get(f"{http_server.base_url}/episodes")
        scenarios = await http.get(f"{http_server.base_url}/scenarios")
    assert response.status_code == 200
    listed = {e["episode_id"]: e for e in response.json()["episodes"]}
    assert {first["episode_id"], second["episode_id"]} <= set(listed)
    one, two = listed[first["episode_id"]], listed[second["episode_id"]]
    assert (one["task"], one["answered"], one["ended"]) == ("fare-class", True, True)
    assert (two["task"], two["answered"], two["ended"]) == ("cheapest-trip", False, False)
    assert one["mcp_url"] == first["mcp_url"]
    assert set(one) == {"episode_id", "mcp_url", "scenario", "task", "ended", "answered"}
    assert scenarios.status_code == 200
    assert "travel" in {s["id"] for s in scenarios.json()}


# -- stopping the server --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_stopping_the_server_ends_open_episodes_as_server_stopped(
    own_http_server: HttpServer, sig: signal.Signals
) -> None:
    server = own_http_server
    legacy = await create_episode(server, scenario="travel", task="fare-class", seed=1)
    modern = await create_episode(server, scenario="travel", task="cheapest-trip", seed=2)
    answered = await create_episode(server, scenario="travel", task="fare-class", seed=3)
    unjoined = await create_episode(server, scenario="travel", task="fare-class", seed=4)
    async with Client(answered["mcp_url"], mode="legacy") as client:
        await client.call_tool(SUBMIT_TOOL, {"answer": "Standard"})

    stack = AsyncExitStack()
    with anyio.fail_after(DEADLINE):
        legacy_client = await stack.enter_async_context(Client(legacy["mcp_url"], mode="legacy"))
        modern_client = await stack.enter_async_context(Client(modern["mcp_url"], mode="2026-07-28"))
        assert (await legacy_client.call_tool("get_fare", {"flight_id": "AU-426"})).is_error is not True
        assert (await modern_client.call_tool("find_city_code", {"city": "Velmora"})).is_error is not True
        # clients still connected (the legacy one holds its event stream open) when the signal arrives
        code = await anyio.to_thread.run_sync(server.stop, sig)
        # the clients may complain that the server went away; that is not under test
        with contextlib.suppress(Exception):
            await stack.aclose()
    assert code in (0, -sig, 128 + sig), f"exit code {code}\n{server.stderr()}"
    assert "Traceback" not in server.stderr(), server.stderr()
    for created in (legacy, modern):
        events = strict_events(Path(created["trace"]))
        assert events[0]["type"] == "episode_started"
        assert events[-1] == {**events[-1], "type": "episode_ended", "reason": "server_stopped"}, events[-1]
        assert sum(1 for e in events if e["type"] == "episode_ended") == 1
        assert len(calls(events)) == 1
    events = strict_events(Path(answered["trace"]))
    assert [e.get("reason") for e in events if e["type"] == "episode_ended"] == ["answered"]
    assert not Path(unjoined["trace"]).exists()  # nothing happened to it: its id may be created again later
    for trace in server.trace_dir.glob("*.jsonl"):
        strict_events(trace)  # every line of every trace is valid JSON


# -- isolation and closing over the wire ----------------------------------------------------------------------------


async def test_a_legacy_session_cannot_be_used_on_another_episode(http_server: HttpServer) -> None:
    first = await create_episode(http_server, scenario="travel", task="fare-class", seed=31)
    second = await create_episode(http_server, scenario="travel", task="fare-class", seed=32)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "get_fare", "arguments": {"flight_id": "AU-412"}},
    }
    async with httpx.AsyncClient(timeout=WAIT_S) as http:
        initialized = await http.post(first["mcp_url"], headers=MCP_HEADERS, json=INITIALIZE)
        assert initialized.status_code == 200, initialized.text
        session = initialized.headers["mcp-session-id"]
        headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY_PROTOCOL}
        await http.post(
            first["mcp_url"], headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        crossed = await http.post(second["mcp_url"], headers=headers, json=call)
        own = await http.post(first["mcp_url"], headers=headers, json=call)
    assert crossed.status_code == 400, crossed.text
    assert first["episode_id"] in crossed.json()["error"]
    assert own.status_code == 200, own.text
    assert len(calls(strict_events(Path(first["trace"])))) == 1
    assert not Path(second["trace"]).exists()  # the episode never started, so it left no trace file


async def test_delete_closes_an_episode_and_later_calls_are_refused(http_server: HttpServer) -> None:
    created = await create_episode(http_server, scenario="travel", task="fare-class", seed=41)
    with anyio.fail_after(DEADLINE):
        async with Client(created["mcp_url"], mode="legacy") as client:
            before = await client.call_tool("get_fare", {"flight_id": "AU-426"})
            async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
                deleted = await http.delete(f"{http_server.base_url}/episodes/{created['episode_id']}")
            after = await client.call_tool("get_fare", {"flight_id": "AU-426"})
    assert before.is_error is not True
    assert deleted.status_code == 200
    assert (deleted.json()["ended"], deleted.json()["answered"]) == (True, False)
    assert after.is_error is True
    events = strict_events(Path(created["trace"]))
    assert [e.get("reason") for e in events if e["type"] == "episode_ended"] == ["closed"]
    assert len(calls(events)) == 1


async def test_delete_of_an_episode_no_client_joined_leaves_its_trace(http_server: HttpServer) -> None:
    """docs/http-api.md: DELETE records `episode_ended` with reason `closed`, whether or not a client ever came."""
    created = await create_episode(http_server, scenario="travel", task="fare-class", seed=43, agent="nobody")
    assert not Path(created["trace"]).exists()  # nothing to record before a client comes or the episode ends
    with anyio.fail_after(DEADLINE):
        async with httpx.AsyncClient(timeout=30, headers=http_server.auth) as http:
            deleted = await http.delete(f"{http_server.base_url}/episodes/{created['episode_id']}")
            again = await http.delete(f"{http_server.base_url}/episodes/{created['episode_id']}")
        events = strict_events(Path(created["trace"]))
        async with Client(created["mcp_url"], mode="legacy") as client:
            late = await client.call_tool("get_fare", {"flight_id": "AU-426"})
    assert deleted.status_code == 200 and deleted.json()["ended"] is True, deleted.text
    assert again.status_code == 200, again.text
    assert [(e["type"], e.get("reason")) for e in events] == [("episode_started", None), ("episode_ended", "closed")]
    started = events[0]
    assert (started["protocol_version"], started["task"], started["condition"]["seed"]) == ("none", "fare-class", 43)
    assert started["run"] == {"episode_id": created["episode_id"], "transport": "http", "agent": "nobody"}
    assert late.is_error is True  # the episode is over: a late client's call is refused, not served
    after = strict_events(Path(created["trace"]))
    assert after[: len(events)] == events and {e["type"] for e in after[len(events) :]} <= {"call_refused"}


async def test_an_episode_no_client_joined_is_released_by_the_ttl_with_its_trace(tmp_path: Path) -> None:
    """`--episode-ttl`: an episode created and never joined is released as `never_connected`, on disk."""
    from conftest import SERVER_STOP_TIMEOUT, start_http_server

    server = start_http_server(tmp_path / "traces", tmp_path / "logs", extra=("--episode-ttl", "1"))
    try:
        created = await create_episode(server, scenario="travel", task="fare-class", seed=44)
        trace = Path(created["trace"])
        with anyio.fail_after(DEADLINE):
            async with httpx.AsyncClient(timeout=30, headers=server.auth) as http:
                while (await http.get(f"{server.base_url}/episodes/{created['episode_id']}")).status_code == 200:
                    await anyio.sleep(0.2)
                gone = await http.get(f"{server.base_url}/episodes/{created['episode_id']}")
    finally:
        server.process.kill()
        server.process.wait(timeout=SERVER_STOP_TIMEOUT)
    assert gone.status_code == 410, gone.text  # released, and its trace is on disk
    events = strict_events(trace)
    assert [(e["type"], e.get("reason")) for e in events] == [("episode_started", None),
                                                              ("episode_ended", "never_connected")]  # fmt: skip
    assert "Traceback" not in server.stderr(), server.stderr()


async def test_refusal_after_delete_does_not_claim_an_answer_was_submitted(http_server: HttpServer) -> None:
    """The agent is told why its call is refused; no answer was submitted here, so it must not be told one was."""
    created = await create_episode(http_server, scenario="travel", task="fare-class", seed=42)
    with anyio.fail_after(DEADLINE):
        async with Client(created["mcp_url"], mode="legacy") as client:
            async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
                await http.delete(f"{http_server.base_url}/episodes/{created['episode_id']}")
            refused = await client.call_tool("get_fare", {"flight_id": "AU-426"})
    assert refused.is_error is True
    assert "answer was already submitted" not in text_of(refused), text_of(refused)

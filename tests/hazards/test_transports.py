"""Hazards over real transports: the same condition and the same agent actions give the same trace on memory,
stdio (a `mcp-hazard serve` subprocess) and HTTP (uvicorn on 127.0.0.1), and list_changed reaches a real SDK
client in both protocol eras.

The condition has three hazards on two tools (a transient error, a specification drift and an output drift), so
the compared traces hold hazard_fired, list_changed, rejected calls and drifted text, not only plain calls.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from conftest import WAIT_S
from mcp import Client, StdioServerParameters

from mcp_hazard.runner.transports import HttpHost, serve_command
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.server.served_episode import SUBMIT_TOOL, TASK_PROMPT_NAME
from mcp_hazard.trace.events import comparable
from mcp_hazard.trace.reader import Trace, first_difference, read_trace

from .support import LEGACY, MODERN, REPO_ROOT, blocks, condition, fired, memory_client, of_type

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

DEADLINE = WAIT_S
SEED = 7
TASK = "fare-in-dollars"
PROFILE = "guided"
HAZARDS = (
    "transient_error:times=1,tools=convert_currency",
    "spec_drift:mode=renamed_field,tools=get_fare",
    "output_drift:mode=unit_wrapper,tools=convert_currency",
)

# A fixed call sequence, identical in every run whatever comes back (results are checked after the run).
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("get_fare", {"flight_id": "AU-412"}),  # slot 1: spec_drift fires, list_changed, rejected (old shape)
    ("get_fare", {"flight_identifier": "AU-412"}),  # slot 2: the new shape works
    ("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}),  # transient error
    ("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}),  # ok, drifted text
    (SUBMIT_TOOL, {"answer": "204.59"}),
]


class Inbox:
    """A message_handler that keeps what the server sent on its own (notifications)."""

    def __init__(self) -> None:
        self.list_changed = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed += 1


async def act(client: Client) -> list[types.CallToolResult]:
    await client.list_tools()
    await client.get_prompt(TASK_PROMPT_NAME)
    results = []
    for index, (tool, arguments) in enumerate(SCRIPT):
        results.append(await client.call_tool(tool, arguments))
        if index == 0:
            await client.list_tools()  # the re-list a client does after list_changed
    return results


def check_results(results: list[types.CallToolResult]) -> None:
    assert [r.is_error for r in results] == [True, False, True, False, False], [blocks(r) for r in results]
    assert '"amount": "204.59"' in blocks(results[3])[0]  # output drift: the number served as text


def wait_for_end(path: Path, timeout: float = WAIT_S) -> Trace:
    """The trace once `episode_ended` is written (a subprocess may still be flushing when the client is gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            trace = read_trace(path)
            if trace.events and trace.events[-1]["type"] == "episode_ended":
                assert trace.warnings == []
                return trace
        time.sleep(0.05)
    raise AssertionError(f"{path}: no episode_ended within {timeout}s")


def stdio_argv(scenario: LoadedScenario, trace_dir: Path, episode_id: str) -> list[str]:
    """`mcp-hazard serve` with the hazards exactly as a user types them."""
    argv = [sys.executable, "-m", "mcp_hazard", "serve", scenario.path, "--task", TASK, "--seed", str(SEED),
            "--trace-dir", str(trace_dir), "--episode-id", episode_id, "--profile", PROFILE]  # fmt: skip
    for hazard in HAZARDS:
        argv += ["--hazard", hazard]
    return argv


async def run_memory(scenario: LoadedScenario, trace_dir: Path, mode: str) -> tuple[Trace, Inbox]:
    inbox = Inbox()
    cond = condition(*HAZARDS, seed=SEED, profile=PROFILE)
    async with memory_client(scenario, TASK, cond, trace_dir, mode=mode, message_handler=inbox) as (client, episode):
        check_results(await act(client))
    assert episode.trace.path is not None
    return wait_for_end(episode.trace.path), inbox


async def run_stdio(argv: list[str], trace_path: Path, mode: str) -> tuple[Trace, Inbox]:
    inbox = Inbox()
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(REPO_ROOT))
    async with Client(params, mode=mode, message_handler=inbox) as client:
        check_results(await act(client))
    return wait_for_end(trace_path), inbox


async def create_http_episode(host: HttpHost, hazards: list[str], *, profile: str = PROFILE) -> dict[str, Any]:
    payload = {"scenario": "travel", "task": TASK, "seed": SEED, "profile": profile, "hazards": hazards}
    async with httpx.AsyncClient(timeout=WAIT_S, headers=host.auth) as http:
        response = await http.post(f"{host.base_url}/episodes", json=payload)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def run_http(host: HttpHost, mode: str) -> tuple[Trace, Inbox]:
    inbox = Inbox()
    created = await create_http_episode(host, list(HAZARDS))
    async with Client(created["mcp_url"], mode=mode, message_handler=inbox) as client:
        check_results(await act(client))
    episode = host.registry.get(created["episode_id"])
    assert episode is not None
    episode.end("disconnected")
    return wait_for_end(host.registry.trace_path(created["episode_id"])), inbox


async def test_same_condition_same_trace_on_every_transport(travel: LoadedScenario, tmp_path: Path) -> None:
    traces: dict[str, Trace] = {}
    inboxes: dict[str, Inbox] = {}
    host = HttpHost(EpisodeRegistry([travel], tmp_path / "http", transport="http"))
    with anyio.fail_after(DEADLINE):
        for name in ("memory-1", "memory-2"):
            traces[name], inboxes[name] = await run_memory(travel, tmp_path / name, LEGACY)
        argv = stdio_argv(travel, tmp_path / "stdio", "stdio-run")
        traces["stdio"], inboxes["stdio"] = await run_stdio(argv, tmp_path / "stdio" / "stdio-run.jsonl", LEGACY)
        # the runner's own stdio command line (hazards passed as JSON objects) must mean the same condition
        cond = condition(*HAZARDS, seed=SEED, profile=PROFILE)
        argv = serve_command(travel, TASK, cond, tmp_path / "stdio-runner", "runner-run")
        path = tmp_path / "stdio-runner" / "runner-run.jsonl"
        traces["stdio-serve_command"], inboxes["stdio-serve_command"] = await run_stdio(argv, path, LEGACY)
        async with host.running():
            traces["http"], inboxes["http"] = await run_http(host, LEGACY)

    reference = traces["memory-1"]
    for name, trace in traces.items():
        assert first_difference(reference, trace) is None, f"memory-1 vs {name}: {first_difference(reference, trace)}"
        assert [comparable(e) for e in reference.events] == [comparable(e) for e in trace.events]
        assert trace.events[0]["run"]["transport"] == name.split("-")[0]
        assert inboxes[name].list_changed == 1, f"{name}: the client saw no tools/list_changed notification"

    # the traces hold what the hazards did, so the comparison is not vacuous
    events = reference.events
    assert events[0]["condition"]["profile"] == PROFILE and events[0]["protocol_version"] == "2025-11-25"
    assert [h["kind"] for h in events[0]["hazards"]] == ["transient_error", "spec_drift", "output_drift"]
    assert fired(events) == [
        ("spec_drift", "get_fare", 1, "before"),
        ("transient_error", "convert_currency", 1, "before"),
        ("output_drift", "convert_currency", 2, "after"),
    ]
    assert [e["delivered"] for e in of_type(events, "list_changed")] == [True]
    outcomes = [(e["tool"], e["slot"], e["outcome"], e["hazards"]) for e in of_type(events, "tool_called")]
    assert outcomes == [
        ("get_fare", 1, "rejected", [1]),
        ("get_fare", 2, "ok", [1]),  # the lasting drift mapped the new shape back: touched, not fired
        ("convert_currency", 1, "rejected", [0]),
        ("convert_currency", 2, "ok", [2]),
    ]
    (answer,) = of_type(events, "answer_submitted")
    task = travel.model.task(TASK)
    assert task is not None and answer_matches(task.answer, answer["answer"])


async def test_another_seed_or_profile_is_recorded(travel: LoadedScenario, tmp_path: Path) -> None:
    """Control for the comparison above: a different condition shows up as a difference in episode_started."""
    first, _ = await run_memory(travel, tmp_path / "a", LEGACY)
    cond = condition(*HAZARDS, seed=SEED, profile="strict")
    async with memory_client(travel, TASK, cond, tmp_path / "b") as (client, episode):
        check_results(await act(client))
    assert episode.trace.path is not None
    assert first_difference(first, read_trace(episode.trace.path)) == (
        "event 0 (episode_started): fields ['condition'] differ"
    )


# -- list_changed in both eras -----------------------------------------------------------------------------------------


async def _drift_and_listen(client: Client) -> list[str]:
    """Open a tools subscription, trigger the drift with an old-shape call, and collect the events."""
    got: list[str] = []
    await client.list_tools()
    async with client.listen(tools_list_changed=True) as subscription:
        assert subscription.honored.tools_list_changed is True
        result = await client.call_tool("get_fare", {"flight_id": "AU-426"})
        assert result.is_error
        with anyio.fail_after(WAIT_S):
            async for event in subscription:
                got.append(type(event).__name__)
                break
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert "get_fare_v2" in tools and "get_fare" not in tools
    return got


async def test_list_changed_modern_in_memory(travel: LoadedScenario, tmp_path: Path) -> None:
    cond = condition("spec_drift:mode=rename_tool")
    with anyio.fail_after(DEADLINE):
        async with memory_client(travel, "fare-class", cond, tmp_path, mode=MODERN) as (client, episode):
            assert await _drift_and_listen(client) == ["ToolsListChanged"]
    assert episode.trace.path is not None
    events = read_trace(episode.trace.path).events
    assert events[0]["protocol_version"] == MODERN
    assert [e["delivered"] for e in of_type(events, "list_changed")] == [True]


async def test_list_changed_modern_over_http(travel: LoadedScenario, tmp_path: Path) -> None:
    host = HttpHost(EpisodeRegistry([travel], tmp_path, transport="http"))
    with anyio.fail_after(DEADLINE):
        async with host.running():
            payload = {
                "scenario": "travel",
                "task": "fare-class",
                "seed": 0,
                "hazards": ["spec_drift:mode=rename_tool"],
            }
            async with httpx.AsyncClient(timeout=WAIT_S, headers=host.auth) as http:
                created = (await http.post(f"{host.base_url}/episodes", json=payload)).json()
            async with Client(created["mcp_url"], mode=MODERN) as client:
                assert await _drift_and_listen(client) == ["ToolsListChanged"]
            episode = host.registry.get(created["episode_id"])
            assert episode is not None
            episode.end("disconnected")
    events = read_trace(host.registry.trace_path(created["episode_id"])).events
    assert events[0]["protocol_version"] == MODERN
    assert [e["delivered"] for e in of_type(events, "list_changed")] == [True]
    assert fired(events) == [("spec_drift", "get_fare", 1, "before")]


async def test_list_changed_modern_does_not_reach_another_episode(travel: LoadedScenario, tmp_path: Path) -> None:
    """The subscription bus is per episode: a drift in episode A is not announced to a listener on episode B."""
    host = HttpHost(EpisodeRegistry([travel], tmp_path, transport="http"))
    payload = {"scenario": "travel", "task": "fare-class", "seed": 0, "hazards": ["spec_drift:mode=rename_tool"]}
    with anyio.fail_after(DEADLINE):
        async with host.running(), httpx.AsyncClient(timeout=WAIT_S, headers=host.auth) as http:
            a = (await http.post(f"{host.base_url}/episodes", json=payload)).json()
            b = (await http.post(f"{host.base_url}/episodes", json=payload)).json()
            async with Client(a["mcp_url"], mode=MODERN) as client_a, Client(b["mcp_url"], mode=MODERN) as client_b:
                await client_b.list_tools()
                async with client_b.listen(tools_list_changed=True) as subscription_b:
                    assert (await client_a.call_tool("get_fare", {"flight_id": "AU-426"})).is_error
                    with anyio.move_on_after(1.0) as waited:
                        async for _event in subscription_b:
                            break
                    assert waited.cancelled_caught, "episode B heard episode A's list_changed"
            for created in (a, b):
                episode = host.registry.get(created["episode_id"])
                assert episode is not None
                episode.end("disconnected")

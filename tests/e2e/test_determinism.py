"""Same condition + same agent actions => the same trace, apart from the volatile fields, on every transport.

Volatile fields (mcp_hazard.trace.events.VOLATILE_FIELDS): `ts`, `duration_ms`, `run` (episode id and transport) and
`detail` (the runner's one line for people in `agent_ended`, which may name a log path or a port).
Between the two protocol eras exactly one more field differs: `protocol_version` of `episode_started`
("2025-11-25" for the legacy handshake era, "2026-07-28" for the modern era). That is what the traces record about
the connection, so it is compared within an era and checked to be the only difference across eras.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
from conftest import WAIT_S
from mcp import Client

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.condition import Condition
from mcp_hazard.runner.transports import HttpHost, Transport, open_episode
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.server.served_episode import SUBMIT_TOOL
from mcp_hazard.trace.events import VOLATILE_FIELDS, comparable
from mcp_hazard.trace.reader import Trace, first_difference, read_trace

from .support import LEGACY_PROTOCOL, MODERN_PROTOCOL, wait_for_trace_end

if TYPE_CHECKING:
    from conftest import HttpServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

DEADLINE = WAIT_S
SEED = 424242

# The fixed extra actions: before the golden path (real calls that take slots, including an invalid one and an
# unknown tool), and the same again after the answer (all refused).
EXTRA_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_fare", {"flight_id": "AU-731"}),
    ("get_fare", {"flight_id": 731}),  # invalid: wrong JSON type
    ("find_city_code", {"city": "Atlantis"}),  # the behaviour's own error
    ("book_a_flight", {"flight_id": "AU-731"}),  # unknown tool
    ("convert_currency", {"amount": 10, "from_currency": "EUR", "to_currency": "GBP"}),
    ("get_fare", {"flight_id": "AU-731", "extra": 1}),  # invalid: extra property
]


async def _act(client: Client, task: Task) -> None:
    """The agent's actions, identical in every run."""
    for tool, arguments in EXTRA_CALLS:
        await client.call_tool(tool, arguments)
    report = await run_golden_agent(client, task)
    assert answer_matches(task.answer, report.answer), report
    for tool, arguments in EXTRA_CALLS:
        late = await client.call_tool(tool, arguments)
        assert late.is_error is True
    await client.call_tool(SUBMIT_TOOL, {"answer": "again"})


def _read(path: Path) -> Trace:
    wait_for_trace_end(path)
    trace = read_trace(path)
    assert trace.warnings == []
    return trace


async def _episode(
    transport: Transport, scenario: LoadedScenario, task: Task, trace_dir: Path, mode: str, host: HttpHost | None
) -> Trace:
    async with open_episode(
        transport, scenario, task.id, Condition(seed=SEED), trace_dir, mode=mode, http_host=host
    ) as connected:
        await _act(connected.client, task)
    return _read(connected.trace_path)


async def _served_episode(server: HttpServer, scenario: LoadedScenario, task: Task, mode: str) -> Trace:
    """The same, against the `mcp-hazard serve DIR --http` subprocess (which loaded the same file)."""
    async with httpx.AsyncClient(timeout=WAIT_S, headers=server.auth) as http:
        response = await http.post(
            f"{server.base_url}/episodes", json={"scenario": scenario.id, "task": task.id, "seed": SEED}
        )
    assert response.status_code == 201, response.text
    created = response.json()
    async with Client(created["mcp_url"], mode=mode) as client:
        await _act(client, task)
    return _read(server.trace_dir / f"{created['episode_id']}.jsonl")


async def _runs(
    scenario: LoadedScenario, task_id: str, tmp_path: Path, mode: str, server: HttpServer
) -> dict[str, Trace]:
    """The same actions over memory (twice), stdio, http in this process, and http in a server subprocess."""
    task = scenario.model.task(task_id)
    assert task is not None
    host = HttpHost(EpisodeRegistry([scenario], tmp_path / "http", transport="http"))
    traces: dict[str, Trace] = {}
    with anyio.fail_after(DEADLINE):
        async with host.running():
            for name, transport in [
                ("memory-1", "memory"),
                ("memory-2", "memory"),
                ("stdio", "stdio"),
                ("http", "http"),
            ]:
                traces[name] = await _episode(transport, scenario, task, tmp_path / name, mode, host)  # type: ignore[arg-type]
        traces["http-subprocess"] = await _served_episode(server, scenario, task, mode)
    return traces


def _assert_same(traces: dict[str, Trace]) -> None:
    names = list(traces)
    reference = traces[names[0]]
    for name in names[1:]:
        difference = first_difference(reference, traces[name])
        assert difference is None, f"{names[0]} vs {name}: {difference}"
        assert [comparable(e) for e in reference.events] == [comparable(e) for e in traces[name].events]


@pytest.mark.parametrize("task_id", ["cheapest-trip", "fare-in-dollars"])
async def test_same_actions_give_the_same_trace_on_every_transport(
    travel: LoadedScenario, tmp_path: Path, task_id: str, http_server: HttpServer
) -> None:
    traces = await _runs(travel, task_id, tmp_path, "legacy", http_server)
    _assert_same(traces)
    reference = traces["memory-1"]
    kinds = [e["type"] for e in reference.events]
    # the actions really happened: real calls with slots, invalid and unknown ones, an answer
    outcomes = [e["outcome"] for e in reference.of_type("tool_called")]
    assert {"ok", "invalid_arguments", "unknown_tool", "error"} <= set(outcomes)
    assert kinds.count("answer_submitted") == 1
    assert reference.events[0]["protocol_version"] == LEGACY_PROTOCOL
    # the volatile fields really differ, so the comparison above is not vacuous
    transports = {name: trace.events[0]["run"]["transport"] for name, trace in traces.items()}
    assert transports == {
        "memory-1": "memory",
        "memory-2": "memory",
        "stdio": "stdio",
        "http": "http",
        "http-subprocess": "http",
    }
    ids = {trace.events[0]["run"]["episode_id"] for trace in traces.values()}
    assert len(ids) == len(traces)
    volatile = {"ts", "duration_ms", "run", "detail"}
    assert volatile == VOLATILE_FIELDS, "update this module's docstring if the set changes"


async def test_eras_differ_only_in_protocol_version(
    travel: LoadedScenario, tmp_path: Path, http_server: HttpServer
) -> None:
    legacy = await _runs(travel, "cheapest-trip", tmp_path / "legacy", "legacy", http_server)
    modern = await _runs(travel, "cheapest-trip", tmp_path / "modern", "2026-07-28", http_server)
    _assert_same(modern)
    assert modern["memory-1"].events[0]["protocol_version"] == MODERN_PROTOCOL
    for name in legacy:
        left, right = legacy[name], modern[name]
        assert first_difference(left, right) == "event 0 (episode_started): fields ['protocol_version'] differ"
        strip = [{k: v for k, v in comparable(e).items() if k != "protocol_version"} for e in left.events]
        assert strip == [{k: v for k, v in comparable(e).items() if k != "protocol_version"} for e in right.events]


async def test_a_rerun_on_the_same_transport_is_identical_but_another_seed_is_recorded(
    travel: LoadedScenario, tmp_path: Path
) -> None:
    """Two memory runs match; a different seed changes only the recorded condition (no hazards are enabled)."""
    task = travel.model.task("fare-class")
    assert task is not None
    traces = []
    for seed in (SEED, SEED, SEED + 1):
        async with open_episode("memory", travel, task.id, Condition(seed=seed), tmp_path, mode="legacy") as c:
            await run_golden_agent(c.client, task)
        traces.append(read_trace(c.trace_path))
    assert first_difference(traces[0], traces[1]) is None
    assert first_difference(traces[0], traces[2]) == "event 0 (episode_started): fields ['condition'] differ"

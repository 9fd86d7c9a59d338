"""The reference agents (naive, recovering, replay) driving real episodes over every transport the runner offers:
memory (in process), stdio (a `mcp-hazard serve` subprocess) and HTTP (uvicorn on 127.0.0.1 through HttpHost).

Each episode is scored from its trace file exactly as `mcp-hazard score` would: the recovering agent must solve the
task under each hazard by the kind's recovery path, the naive agent must fail it (the hazard bites) and solve the
clean task.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from conftest import WAIT_S

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.drive import Agent, AgentReport, Brief
from mcp_hazard.agents.replay import ReplayAgent
from mcp_hazard.condition import Condition
from mcp_hazard.hazards.instances import parse_hazard_option
from mcp_hazard.runner.transports import HttpHost, Transport, open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scoring.episode_score import EpisodeScore, score_episode
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.trace.reader import Trace, first_difference, read_trace

from .support import jsonl

pytestmark = pytest.mark.anyio

EPISODE_DEADLINE = WAIT_S  # seconds for one whole episode, connection included
TRACE_DEADLINE = WAIT_S  # seconds for a stdio server to write its last event after the client left
CALL_TIMEOUT = 1.0

MEMORY = pytest.param("memory", id="memory")
STDIO = pytest.param("stdio", id="stdio", marks=pytest.mark.e2e)
HTTP = pytest.param("http", id="http", marks=pytest.mark.e2e)

# (task, hazard option as on the command line, the recovery path the recovering agent must take)
HAZARD_CASES = [
    ("fare-class", "transient_error", "retry"),
    ("fare-class", "spec_drift", "relist"),
    ("fare-in-dollars", "invocation_error", "corrected_call"),
    ("fare-class", "output_drift", "normalise"),
    ("cheapest-trip", "pagination", "paginate"),
    ("fare-in-dollars", "permanent_error", "fallback"),
    ("fare-in-dollars", "conflict", "cross_check"),
]
CLEAN_TASKS = ["fare-class", "cheapest-trip", "fare-in-dollars"]

# A stdio episode starts a `mcp-hazard serve` process (about two seconds): stdio runs the cases where the transport
# matters most (a list_changed notification, an error result retried, a changed listing schema), memory and HTTP all.
# The recovering agent meets them over stdio; the naive agent's defeat by the same hazards is its own logic, the same
# on every transport (memory and HTTP prove it), and both agents solve a clean task over stdio in
# tests/runner/test_run_cli.py (`builtin_run[stdio]`).
STDIO_RECOVERING = {"transient_error", "spec_drift", "pagination"}
STDIO_NAIVE: set[str] = set()
STDIO_CLEAN: set[str] = set()


def hazard_params(stdio: set[str]) -> list[Any]:
    """(transport, task, hazard, path) for every case on memory and HTTP, and on stdio for the hazards in `stdio`."""
    params = []
    for task_id, hazard, path in HAZARD_CASES:
        for transport in (MEMORY, STDIO, HTTP):
            name = transport.values[0]
            if name == "stdio" and hazard not in stdio:
                continue
            params.append(pytest.param(name, task_id, hazard, path, marks=transport.marks, id=f"{hazard}-{name}"))
    return params


T = TypeVar("T")


def condition_of(*hazards: str, seed: int = 0) -> Condition:
    specs: list[Any] = []
    for text in hazards:
        parsed = parse_hazard_option(text)
        specs.extend(parsed if isinstance(parsed, list) else [parsed])
    return Condition(seed=seed, hazards=specs)


def brief_for(scenario: LoadedScenario, task_id: str) -> Brief:
    task = scenario.model.task(task_id)
    assert task is not None
    return Brief(prompt=task.prompt, plan=task.golden_path, call_timeout_s=CALL_TIMEOUT)


async def with_host(
    transport: Transport, scenario: LoadedScenario, trace_dir: Path, body: Callable[[HttpHost | None], Awaitable[T]]
) -> T:
    """Run `body` with a live HttpHost for the http transport (None otherwise)."""
    if transport != "http":
        return await body(None)
    host = HttpHost(EpisodeRegistry([scenario], trace_dir, transport="http"))
    async with host.running():
        return await body(host)


def wait_for_end(path: Path, timeout: float = TRACE_DEADLINE) -> None:
    """A stdio server writes `episode_ended` as it exits, which may trail the client's exit by a moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and any(e["type"] == "episode_ended" for e in jsonl(path)):
            return
        time.sleep(0.05)
    raise AssertionError(f"{path}: no episode_ended within {timeout}s")


async def play(
    transport: Transport,
    scenario: LoadedScenario,
    task_id: str,
    condition: Condition,
    agent: Agent,
    trace_dir: Path,
    *,
    brief: Brief | None = None,
    mode: str = "auto",
) -> tuple[AgentReport, Path]:
    """One episode of `agent` over `transport`; returns the agent's report and the finished trace's path."""

    async def body(host: HttpHost | None) -> tuple[AgentReport, Path]:
        with anyio.fail_after(EPISODE_DEADLINE):
            async with open_episode(
                transport, scenario, task_id, condition, trace_dir, mode=mode, http_host=host, agent=agent.name
            ) as connected:
                report = await agent.run(connected.client, brief or brief_for(scenario, task_id))
        return report, connected.trace_path

    report, path = await with_host(transport, scenario, trace_dir, body)
    wait_for_end(path)
    return report, path


def scored(path: Path, scenario: LoadedScenario) -> tuple[Trace, EpisodeScore]:
    trace = read_trace(path)
    assert not trace.warnings, trace.warnings
    return trace, score_episode(trace, scenario.model)


def describe(score: EpisodeScore) -> str:
    verdicts = [(v.kind, v.tool, v.slot, v.recovered, v.path) for v in score.verdicts]
    return f"answer={score.answer!r} failure={score.episode_failure} verdicts={verdicts} trace={score.trace}"


# -- naive and recovering under each hazard ---------------------------------------------------------------------


@pytest.mark.parametrize(("transport", "task_id", "hazard", "path"), hazard_params(STDIO_RECOVERING))
async def test_recovering_agent_solves_by_the_recovery_path(
    transport: Transport, task_id: str, hazard: str, path: str, travel: LoadedScenario, tmp_path: Path
) -> None:
    agent = make_agent("recovering")
    report, trace_path = await play(transport, travel, task_id, condition_of(hazard), agent, tmp_path)
    trace, score = scored(trace_path, travel)
    assert score.correct, describe(score)
    assert score.answer == report.answer
    assert score.agent == "recovering" and trace.started is not None
    assert trace.started["run"]["transport"] == transport
    assert score.ended == "answered", describe(score)
    assert score.verdicts, f"{hazard} never fired: {describe(score)}"
    assert {v.kind for v in score.verdicts} == {hazard}
    assert any(v.recovered and v.path == path for v in score.verdicts), describe(score)
    assert not score.premature, score.premature_reasons
    if hazard != "pagination":  # see test_every_page_firing_counts_as_recovered
        assert all(v.recovered for v in score.verdicts), describe(score)


@pytest.mark.parametrize(("transport", "task_id", "hazard", "path"), hazard_params(STDIO_NAIVE))
async def test_naive_agent_is_defeated(
    transport: Transport, task_id: str, hazard: str, path: str, travel: LoadedScenario, tmp_path: Path
) -> None:
    report, trace_path = await play(transport, travel, task_id, condition_of(hazard), make_agent("naive"), tmp_path)
    _trace, score = scored(trace_path, travel)
    assert not score.correct, describe(score)
    assert score.verdicts, f"{hazard} never fired: {describe(score)}"
    assert not any(v.recovered for v in score.verdicts), describe(score)
    if report.answer is None:
        assert score.episode_failure == "no_answer", describe(score)
        assert score.ended in ("disconnected", "server_stopped"), describe(score)
    else:  # a hazard that changes the data (pagination, conflict) leads the naive agent to a wrong answer
        assert score.answer == report.answer and score.episode_failure in ("wrong_answer", "invented"), describe(score)


@pytest.mark.parametrize(
    ("transport", "task_id"),
    [pytest.param(t.values[0], task, marks=t.marks, id=f"{task}-{t.values[0]}") for task in CLEAN_TASKS
     for t in (MEMORY, STDIO, HTTP) if t.values[0] != "stdio" or task in STDIO_CLEAN],
)  # fmt: skip
@pytest.mark.parametrize("agent", ["naive", "recovering"])
async def test_both_agents_solve_the_clean_task(
    transport: Transport, agent: str, task_id: str, travel: LoadedScenario, tmp_path: Path
) -> None:
    task = travel.model.task(task_id)
    assert task is not None
    report, trace_path = await play(transport, travel, task_id, condition_of(), make_agent(agent), tmp_path)
    _trace, score = scored(trace_path, travel)
    assert score.correct and score.episode_failure is None, describe(score)
    assert score.answer == report.answer
    assert score.verdicts == [] and score.failures == []
    # no retries, no detours when nothing goes wrong; the recovering agent reads each step twice (agents/rereading.py)
    reads = 2 if agent == "recovering" else 1
    assert score.calls == reads * len(task.golden_path.steps)
    assert score.redundant_calls == (reads - 1) * len(task.golden_path.steps)


async def test_every_page_firing_counts_as_recovered(travel: LoadedScenario, tmp_path: Path) -> None:
    """The recovering agent fetches pages 1, 2 and 3 of 3 and answers correctly. The hazard fires on every page,
    the last included; the firing on the last page has no later page to fetch, yet the scorer (docs/scoring.md:
    recovered when "the agent called the tool again with `page` 2 or more") marks it unrecovered, so an agent that did
    everything right gets a pagination recovery rate below 100%."""
    _report, trace_path = await play("memory", travel, "cheapest-trip", condition_of("pagination"),
                                     make_agent("recovering"), tmp_path)  # fmt: skip
    trace, score = scored(trace_path, travel)
    pages = [c["arguments"].get("page", 1) for c in trace.of_type("tool_called") if c["tool"] == "search_flights"]
    assert pages == [1, 2, 3] * 2 and score.correct, describe(score)  # read twice to verify (agents/rereading.py)
    unrecovered = [(v.slot, v.tool) for v in score.verdicts if not v.recovered]
    assert unrecovered == [], f"pagination firings scored unrecovered although every page was fetched: {unrecovered}"


async def test_recovering_agent_does_not_invent_an_answer_when_stuck(travel: LoadedScenario, tmp_path: Path) -> None:
    """get_fare fails nine times; the only other fare tool (fare_archive_lookup) has no fare class. The recovering
    agent falls back to it and, in `convert_field`, takes the one number in that result (`fare_cents`: 16700 -> 167)
    as the `fare_class`, then submits "167". A reference agent that cannot get the data must not make it up: it may
    give up or answer nothing, never submit an invented value."""
    report, trace_path = await play("memory", travel, "fare-class", condition_of("transient_error:times=9"),
                                    make_agent("recovering"), tmp_path)  # fmt: skip
    _trace, score = scored(trace_path, travel)
    assert score.episode_failure in ("no_answer", "gave_up"), (
        f"the recovering agent submitted {report.answer!r} for the fare class ({describe(score)})"
    )


# -- the replay agent ---------------------------------------------------------------------------------------------

REPLAY_HAZARDS = ("transient_error:times=1", "spec_drift:tools=get_fare", "output_drift:tools=convert_currency")


@pytest.fixture(scope="module")
def recorded(travel: LoadedScenario, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Traces of the naive and recovering agents on fare-in-dollars under three hazards at once (memory)."""
    folder = tmp_path_factory.mktemp("recorded")

    async def record() -> dict[str, Path]:
        paths = {}
        for name in ("naive", "recovering"):
            _report, path = await play("memory", travel, "fare-in-dollars", condition_of(*REPLAY_HAZARDS),
                                       make_agent(name), folder)  # fmt: skip
            paths[name] = path
        return paths

    return anyio.run(record)


@pytest.mark.parametrize(
    ("transport", "recorded_agent"),
    [("memory", "naive"), ("memory", "recovering"), pytest.param("stdio", "recovering", marks=pytest.mark.e2e),
     pytest.param("http", "naive", marks=pytest.mark.e2e), pytest.param("http", "recovering", marks=pytest.mark.e2e)],
)  # fmt: skip
async def test_replay_agent_repeats_a_trace_exactly(
    transport: Transport, recorded_agent: str, recorded: dict[str, Path], travel: LoadedScenario, tmp_path: Path
) -> None:
    old = read_trace(recorded[recorded_agent])
    started = old.started
    assert started is not None
    old_score = score_episode(old, travel.model)
    assert old_score.verdicts, "the recorded episode met no hazard"
    agent = ReplayAgent.from_trace(old.events)
    condition = Condition.model_validate(started["condition"])
    report, new_path = await play(transport, travel, "fare-in-dollars", condition, agent, tmp_path,
                                  brief=Brief(prompt=""), mode=started["protocol_version"])  # fmt: skip
    new = read_trace(new_path)
    assert first_difference(old, new) is None
    assert [e["type"] for e in new.events] == [e["type"] for e in old.events]
    new_score = score_episode(new, travel.model)
    assert (new_score.correct, new_score.answer, new_score.episode_failure) == (
        old_score.correct, old_score.answer, old_score.episode_failure,
    )  # fmt: skip
    assert [(v.kind, v.slot, v.recovered, v.path) for v in new_score.verdicts] == [
        (v.kind, v.slot, v.recovered, v.path) for v in old_score.verdicts
    ]
    assert report.answer == old_score.answer


async def test_replay_agent_from_a_script_solves_over_http(travel: LoadedScenario, tmp_path: Path) -> None:
    agent = ReplayAgent.from_script([{"tool": "get_fare", "arguments": {"flight_id": "AU-426"}}], "Standard")
    _report, path = await play("http", travel, "fare-class", condition_of(), agent, tmp_path, brief=Brief(prompt=""))
    _trace, score = scored(path, travel)
    assert score.correct and score.agent == "replay", describe(score)

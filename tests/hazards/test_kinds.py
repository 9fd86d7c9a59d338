"""Every registered hazard kind, end to end over the in-memory transport with a real SDK client on travel.yaml.

For each kind (iterating `REGISTRY`, so a new kind without a case here fails `test_every_kind_has_a_case`):
- it fires where its schedule says and only there (the trace's `hazard_fired` events: kind, tool, slot, failpoint),
  and each firing is referenced by the `hazards` of the `tool_called` event of that slot;
- a scripted client that follows the kind's declared recovery path (retry, fallback via fare_archive_lookup,
  corrected call, re-list and call the new shape, normalise the text, cross-check the sibling and prefer the fresher
  `as_of`, read a value again and keep the reading that repeats, fetch all pages) reaches the canonical answer and
  submits it;
- the naive golden-path client (no recovery) does not reach it where the hazard bites.

Latency is driven separately, with a client timeout, because its recovery (cancel, retry) is the client's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import WAIT_S
from mcp.shared.exceptions import MCPError

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.hazards import REGISTRY
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.stable import draw

from .support import (
    DEADLINE,
    LEGACY,
    MODERN,
    Agent,
    adapt_to_listing,
    blocks,
    condition,
    correct_from_error,
    fired,
    follow_golden_path,
    hint_of,
    main_text,
    memory_client,
    normalise,
    of_type,
    read_events,
    value_of,
)

pytestmark = pytest.mark.anyio

Fire = tuple[str, int, str]  # (tool, slot, failpoint)
Recovery = Callable[[Agent, Task], Awaitable[str]]


# -- recovery paths (scripted; they know travel.yaml as a careful agent would after reading the listing) ------------

# get_fare and fare_archive_lookup serve the same fact (`serves: [flight_fare]`), in euros and in euro cents.
FARE_SIBLING = {
    "get_fare": (
        "fare_archive_lookup",
        lambda args: {"flight": args["flight_id"]},
        lambda value: {
            "flight_id": value["flight"],
            "price_eur": value["fare_cents"] / 100,
            "as_of": value.get("as_of"),
        },
    )
}


def _ok(result: Any, what: str) -> None:
    assert not result.is_error, f"{what}: {blocks(result)}"


async def retry(agent: Agent, task: Task) -> str:
    async def step(tool: str, args: dict[str, Any]) -> Any:
        for _ in range(5):
            result = await agent.call(tool, args)
            if not result.is_error:
                return value_of(result)
        raise AssertionError(f"{tool} still failing after 5 attempts: {agent.errors[-1]}")

    return await follow_golden_path(agent.client, task, step)


async def fallback(agent: Agent, task: Task) -> str:
    async def step(tool: str, args: dict[str, Any]) -> Any:
        for _ in range(2):  # a strict error does not say it is permanent: one retry, then the sibling tool
            result = await agent.call(tool, args)
            if not result.is_error:
                return value_of(result)
        other, to_args, to_value = FARE_SIBLING[tool]
        result = await agent.call(other, to_args(args))
        _ok(result, other)
        return to_value(value_of(result))

    return await follow_golden_path(agent.client, task, step)


async def corrected_call(agent: Agent, task: Task) -> str:
    lessons: dict[str, tuple[str, str]] = {}  # tool -> (error, hint) that taught the new format

    async def step(tool: str, args: dict[str, Any]) -> Any:
        if tool in lessons:
            args = correct_from_error(*lessons[tool], args) or args
        result = await agent.call(tool, args)
        if result.is_error:
            lessons[tool] = (main_text(result), hint_of(result))
            fixed = correct_from_error(*lessons[tool], args)
            assert fixed is not None, f"nothing in the error says how to correct the call: {blocks(result)}"
            result = await agent.call(tool, fixed)
        _ok(result, tool)
        return value_of(result)

    return await follow_golden_path(agent.client, task, step)


async def relist(agent: Agent, task: Task) -> str:
    await agent.relist()

    async def step(tool: str, args: dict[str, Any]) -> Any:
        result = await agent.call(*adapt_to_listing(agent.tools, tool, args))
        if result.is_error:
            await agent.relist()
            result = await agent.call(*adapt_to_listing(agent.tools, tool, args))
        _ok(result, tool)
        return value_of(result)

    return await follow_golden_path(agent.client, task, step)


async def normalised(agent: Agent, task: Task) -> str:
    async def step(tool: str, args: dict[str, Any]) -> Any:
        result = await agent.call(tool, args)
        _ok(result, tool)
        if result.structured_content is not None:
            return result.structured_content
        return normalise(main_text(result))

    return await follow_golden_path(agent.client, task, step)


async def cross_check(agent: Agent, task: Task) -> str:
    async def step(tool: str, args: dict[str, Any]) -> Any:
        result = await agent.call(tool, args)
        _ok(result, tool)
        value = value_of(result)
        if isinstance(value, dict) and "as_of" in value and tool in FARE_SIBLING:
            other, to_args, to_value = FARE_SIBLING[tool]
            sibling = await agent.call(other, to_args(args))
            _ok(sibling, other)
            fresh = to_value(value_of(sibling))
            if str(fresh["as_of"]) > str(value["as_of"]):  # ISO dates: the later one is the fresher source
                return fresh
        return value

    return await follow_golden_path(agent.client, task, step)


def reread(check: bool) -> Recovery:
    """With `check`, reads every step twice and, when the readings disagree, a third time, keeping the value two
    readings share (a repeat of a call that already succeeded reads the right value); else trusts the first."""

    async def run(agent: Agent, task: Task) -> str:
        async def read(tool: str, args: dict[str, Any]) -> Any:
            result = await agent.call(tool, args)
            _ok(result, tool)
            return value_of(result)

        async def step(tool: str, args: dict[str, Any]) -> Any:
            readings = [await read(tool, args)]
            if check:
                readings.append(await read(tool, args))
                if readings[0] != readings[1]:
                    readings.append(await read(tool, args))
            return max(readings, key=readings.count)

        return await follow_golden_path(agent.client, task, step)

    return run


async def paginate(agent: Agent, task: Task) -> str:
    async def step(tool: str, args: dict[str, Any]) -> Any:
        result = await agent.call(tool, args)
        _ok(result, tool)
        value = value_of(result)
        while isinstance(value, dict) and value.get("next_page"):
            page = await agent.call(tool, {**args, "page": value["next_page"]})
            _ok(page, f"{tool} page {value['next_page']}")
            more = value_of(page)
            merged = {k: (value[k] + more[k] if isinstance(value[k], list) else more[k]) for k in value}
            value = merged
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in ("page", "total_pages", "next_page")}
        return value

    return await follow_golden_path(agent.client, task, step)


# -- the cases ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    task: str
    hazard: str
    recover: Recovery
    fires: tuple[Fire, ...] | None  # None: computed from the schedule's documented hash keys (probability cases)
    naive_fails: bool | None  # None: the naive client's fate is not what this case is about
    profile: str = "strict"
    seed: int = 0


CASES: list[Case] = [
    # execution failures
    Case("transient-default", "transient_error", "fare-class", "transient_error", retry,
         (("get_fare", 1, "before"), ("get_fare", 2, "before")), True),
    Case("transient-after-calls", "transient_error", "two-nights",
         "transient_error:error=rate_limited,retry_after_s=0,after_calls=1,times=2", retry,
         (("search_hotels", 2, "before"), ("search_hotels", 3, "before")), True),
    Case("transient-slots", "transient_error", "fare-in-dollars", "transient_error:slots=1+3", retry,
         (("get_fare", 1, "before"), ("convert_currency", 1, "before")), True),
    Case("transient-probability", "transient_error", "fare-class", "transient_error:probability=0.5,times=3", retry,
         None, None, seed=9),
    Case("permanent", "permanent_error", "fare-in-dollars", "permanent_error", fallback,
         (("get_fare", 1, "before"), ("get_fare", 2, "before")), True),
    # invocation errors: the listing is not updated; the error (strict) or hint (guided) says what is expected
    Case("invocation-date", "invocation_error", "cheapest-trip", "invocation_error:mode=date_format", corrected_call,
         (("search_flights", 1, "before"),), True),
    Case("invocation-type", "invocation_error", "fare-in-dollars", "invocation_error:mode=type_as_string",
         corrected_call, (("convert_currency", 1, "before"),), True),
    Case("invocation-renamed", "invocation_error", "fare-class", "invocation_error:mode=renamed_field",
         corrected_call, (("get_fare", 1, "before"),), True, profile="guided"),
    Case("invocation-renamed-strict", "invocation_error", "fare-class", "invocation_error:mode=renamed_field",
         corrected_call, (("get_fare", 1, "before"),), True),
    Case("invocation-default", "invocation_error", "cheapest-trip", "invocation_error", corrected_call,
         (("find_city_code", 1, "before"), ("search_flights", 1, "before")), True, profile="guided", seed=3),
    # specification drift: the listing changes; re-list and call the new shape
    Case("drift-default", "spec_drift", "fare-class", "spec_drift", relist, (("get_fare", 1, "before"),), True),
    Case("drift-rename-tool", "spec_drift", "fare-class", "spec_drift:mode=rename_tool", relist,
         (("get_fare", 1, "before"),), True),
    Case("drift-renamed-field", "spec_drift", "fare-class", "spec_drift:mode=renamed_field", relist,
         (("get_fare", 1, "before"),), True),
    Case("drift-new-required", "spec_drift", "fare-class", "spec_drift:mode=new_required", relist,
         (("get_fare", 1, "before"),), True),
    Case("drift-date", "spec_drift", "cheapest-trip", "spec_drift:mode=date_format", relist,
         (("search_flights", 1, "before"),), True),
    Case("drift-type", "spec_drift", "fare-in-dollars", "spec_drift:mode=type_as_string", relist,
         (("convert_currency", 1, "before"),), True),
    Case("drift-from-start", "spec_drift", "fare-class", "spec_drift:mode=renamed_field,from_start=true", relist,
         (("get_fare", 0, "listing"),), True),
    # output drift: the right fact in another form
    *[
        Case(f"output-{mode}", "output_drift", "fare-in-dollars", f"output_drift:mode={mode}", normalised,
             (("get_fare", 1, "after"), ("convert_currency", 1, "after")), None)
        for mode in ("unit_wrapper", "label_value", "explanation", "reordered")
    ],
    Case("output-label-list", "output_drift", "cheapest-trip", "output_drift:mode=label_value", normalised,
         (("find_city_code", 1, "after"), ("find_city_code", 2, "after"), ("search_flights", 1, "after")), None),
    # cross-source conflict
    Case("conflict", "conflict", "fare-in-dollars", "conflict", cross_check, (("get_fare", 1, "after"),), True),
    Case("conflict-factor", "conflict", "fare-in-dollars", "conflict:factor=2", cross_check,
         (("get_fare", 1, "after"),), True),
    # silent wrong value: the first reading of each golden call is wrong; re-reading gives the right value
    Case("silent", "silent_wrong_value", "fare-in-dollars", "silent_wrong_value", reread(check=True),
         (("get_fare", 1, "after"), ("convert_currency", 1, "after")), True, seed=1),
    # slot 2 is the re-read of slot 1 (a repeat reads right, never fired on); slot 3 is OLY's first reading
    Case("silent-slots", "silent_wrong_value", "two-nights", "silent_wrong_value:slots=2+3", reread(check=True),
         (("search_hotels", 3, "after"),), None),
    # pagination
    Case("pagination", "pagination", "cheapest-trip", "pagination", paginate,
         (("search_flights", 1, "after"), ("search_flights", 2, "after"), ("search_flights", 3, "after")), True),
    Case("pagination-hotels", "pagination", "two-nights", "pagination", paginate,
         tuple(("search_hotels", slot, "after") for slot in (1, 2, 3, 4)), True),
    Case("pagination-size-2", "pagination", "cheapest-trip", "pagination:page_size=2", paginate,
         (("search_flights", 1, "after"), ("search_flights", 2, "after")), None),
]  # fmt: skip
COVERED_ELSEWHERE = {"latency", "lost_response", "rate_limit"}  # test_latency_* below: its recovery needs a client
# timeout; lost_response needs a write (test_lost_response.py, on scenarios/writes/orders.yaml); rate_limit a wait
# (test_rate_limit.py)


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_every_kind_has_a_case(kind: str) -> None:
    assert kind in {case.kind for case in CASES} | COVERED_ELSEWHERE, f"hazard kind {kind!r} has no test case"


def _expected_by_draw(case: Case, tool: str, slots: int) -> tuple[Fire, ...]:
    """The documented schedule, computed here from the hash keys (seed, scenario, task, tool, failpoint, slot,
    hazard salt `index:kind`), independently of Schedule.fires: probability 0.5, at most 3 firings."""
    expected: list[Fire] = []
    for slot in range(1, slots + 1):
        if len(expected) < 3 and draw(case.seed, "travel", case.task, tool, "before", slot, f"0:{case.kind}") < 0.5:
            expected.append((tool, slot, "before"))
    return tuple(expected)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_recovery_reaches_the_answer(case: Case, travel: LoadedScenario, tmp_path: Path) -> None:
    task = travel.model.task(case.task)
    assert task is not None
    cond = condition(case.hazard, seed=case.seed, profile=case.profile)
    with anyio.fail_after(DEADLINE):
        async with memory_client(travel, case.task, cond, tmp_path) as (client, episode):
            answer = await case.recover(Agent(client), task)
    events = read_events(episode.trace.path)

    assert answer_matches(task.answer, answer), f"recovered answer {answer!r}, canonical {task.answer.value!r}"
    submitted = of_type(events, "answer_submitted")
    assert [e["answer"] for e in submitted] == [answer]

    calls = of_type(events, "tool_called")
    expected = case.fires
    if expected is None:
        expected = _expected_by_draw(case, "get_fare", max(c["slot"] for c in calls if c["tool"] == "get_fare"))
        assert expected, "pick a seed where the hazard fires at least once"
    assert fired(events) == [(case.kind, *fire) for fire in expected]
    for event in of_type(events, "hazard_fired"):
        assert event["hazard"] == 0 and event["family"] == REGISTRY[case.kind].family
        if event["failpoint"] != "listing":
            call = next(c for c in calls if (c["tool"], c["slot"]) == (event["tool"], event["slot"]))
            assert 0 in call["hazards"], call
    list_changed = of_type(events, "list_changed")
    if case.kind == "spec_drift" and "from_start" not in case.hazard:
        assert [e["delivered"] for e in list_changed] == [True]
    else:
        assert list_changed == []
    # views share the scenario's schemas (ToolView.of): a hazard that edited one in place would show here
    assert schemas_of(travel) == schemas_of(load_scenario(travel.path)), "a hazard edited the scenario's schemas"


def schemas_of(loaded: LoadedScenario) -> str:
    return json.dumps([[t.input_schema, t.output_schema] for t in loaded.model.tools], sort_keys=True)


@pytest.mark.parametrize("case", [c for c in CASES if c.naive_fails], ids=lambda c: c.id)
async def test_naive_client_misses_the_answer(case: Case, travel: LoadedScenario, tmp_path: Path) -> None:
    task = travel.model.task(case.task)
    assert task is not None
    cond = condition(case.hazard, seed=case.seed, profile=case.profile)
    with anyio.fail_after(DEADLINE):
        async with memory_client(travel, case.task, cond, tmp_path) as (client, _episode):
            report = await run_golden_agent(client, task)
    assert report.answer is None or not answer_matches(task.answer, report.answer), report


async def test_naive_clients_reach_the_answer_without_hazards(travel: LoadedScenario, tmp_path: Path) -> None:
    """The control: the same naive client succeeds on every travel task when nothing is injected."""
    for task in travel.model.tasks:
        async with memory_client(travel, task.id, condition(), tmp_path, name=task.id) as (client, _episode):
            report = await run_golden_agent(client, task)
        assert report.answer is not None and answer_matches(task.answer, report.answer), (task.id, report)


async def test_silent_wrong_value_fools_a_client_that_does_not_verify(travel: LoadedScenario, tmp_path: Path) -> None:
    task = travel.model.task("fare-class")
    assert task is not None
    async with memory_client(travel, task.id, condition("silent_wrong_value", seed=1), tmp_path) as (client, episode):
        answer = await reread(check=False)(Agent(client), task)
    events = read_events(episode.trace.path)
    (event,) = of_type(events, "hazard_fired")
    assert event["change"]["path"] == ["fare_class"] and event["change"]["original"] == "Standard"
    (call,) = of_type(events, "tool_called")[:1]
    assert call["outcome"] == "ok" and call["result"]["flight_id"] == "AU-426"  # the identifying field is kept
    assert call["result"]["fare_class"] == event["change"]["served"] == answer
    assert not answer_matches(task.answer, answer)


async def test_silent_wrong_value_leaves_calls_with_wrong_inputs_alone(travel: LoadedScenario, tmp_path: Path) -> None:
    """A call that errors stays an error (the old hazard turned it into another row); only correct calls are hit."""
    task = travel.model.task("fare-class")
    assert task is not None
    async with memory_client(travel, task.id, condition("silent_wrong_value"), tmp_path) as (client, episode):
        result = await Agent(client).call("get_fare", {"flight_id": "AU-421"})
    assert result.is_error
    assert fired(read_events(episode.trace.path)) == []


async def test_a_rejection_does_not_swallow_another_hazards_slot(travel: LoadedScenario, tmp_path: Path) -> None:
    """Two hazards on one tool, both at the `before` failpoint: a transient error (times=1) and a specification
    drift (default schedule `slots: [1]`, i.e. "on the tool's first call").

    BUG (reported): HazardEngine.before stops at the first rejection, so the drift's schedule is never asked at
    slot 1; at slot 2 it is no longer eligible, so the drift never happens although the trace's episode_started
    lists it. The same masking makes `--hazard all` inject far less than it says (invocation_error, first in the
    sorted list, rejects every old-shape call, so spec_drift, latency, permanent_error and transient_error never
    get their slot 1 on the same tool)."""
    task = travel.model.task("fare-class")
    assert task is not None
    cond = condition("transient_error:times=1", "spec_drift:mode=renamed_field")
    async with memory_client(travel, task.id, cond, tmp_path) as (client, episode):
        answer = await relist(Agent(client), task)
    events = read_events(episode.trace.path)
    assert answer_matches(task.answer, answer)
    assert [h["kind"] for h in events[0]["hazards"]] == ["transient_error", "spec_drift"]
    kinds = [kind for kind, *_ in fired(events)]
    assert "transient_error" in kinds
    assert "spec_drift" in kinds, f"the drift never fired; hazard_fired: {fired(events)}"


# -- what the listing shows ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hazard", ["output_drift", "conflict", "pagination:tools=get_fare"])
async def test_result_changing_kinds_list_targets_without_output_schema(
    hazard: str, travel: LoadedScenario, tmp_path: Path
) -> None:
    """The SDK client validates structured content against a listed output_schema, so a kind that changes a
    result's form or fields lists its targets without one (and the client accepts every drifted result)."""
    async with memory_client(travel, "fare-in-dollars", condition(hazard), tmp_path) as (client, _episode):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        clean_tools = {tool.name: tool for tool in travel.model.tools}
        assert tools["get_fare"].output_schema is None
        assert clean_tools["get_fare"].output_schema is not None
        assert tools["find_city_code"].output_schema == clean_tools["find_city_code"].output_schema  # not a target
        result = await client.call_tool("get_fare", {"flight_id": "AU-412"})
        assert not result.is_error


async def test_output_drift_serves_text_only(travel: LoadedScenario, tmp_path: Path) -> None:
    cond = condition("output_drift:mode=unit_wrapper")
    async with memory_client(travel, "fare-in-dollars", cond, tmp_path) as (client, _episode):
        result = await client.call_tool("get_fare", {"flight_id": "AU-412"})
    assert result.structured_content is None
    assert '"price_eur": "189.0 EUR"' in main_text(result)


async def test_pagination_lists_a_page_argument(travel: LoadedScenario, tmp_path: Path) -> None:
    async with memory_client(travel, "cheapest-trip", condition("pagination"), tmp_path) as (client, _episode):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        bad = await client.call_tool("search_flights", {"origin": "VLM", "destination": "CST", "date": "2026-03-14",
                                                        "page": 0})  # fmt: skip
    page = tools["search_flights"].input_schema["properties"]["page"]
    assert page["type"] == "integer" and "page" not in tools["search_flights"].input_schema.get("required", [])
    assert bad.is_error and "'page'" in main_text(bad)


async def test_pagination_guided_hint_stops_at_the_last_page(travel: LoadedScenario, tmp_path: Path) -> None:
    """BUG (reported): the guided hint 'request the next pages' is served with every page, also with the last one
    (`next_page: null`), so it tells a careful agent to ask for a page that does not exist."""
    cond = condition("pagination", profile="guided")
    flights = {"origin": "VLM", "destination": "CST", "date": "2026-03-14"}
    async with memory_client(travel, "cheapest-trip", cond, tmp_path) as (client, _episode):
        first = await client.call_tool("search_flights", flights)
        last = await client.call_tool("search_flights", {**flights, "page": 3})
    assert value_of(first)["next_page"] == 2 and "next pages" in hint_of(first)
    assert value_of(last)["next_page"] is None
    assert "next pages" not in hint_of(last), hint_of(last)


# -- latency: the client's own timeout, then a retry -------------------------------------------------------------------


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_latency_trips_the_client_timeout_then_a_retry_succeeds(
    mode: str, travel: LoadedScenario, tmp_path: Path
) -> None:
    """`latency:seconds=3` against a client with a 0.5 s read timeout: the client raises MCPError (-32001, its own
    timeout) and cancels; the server records the call as `cancelled` (it stops sleeping when the request is
    cancelled); the retry (slot 2, outside the default `slots: [1]`) answers at once and the task is solved."""
    task = travel.model.task("fare-class")
    assert task is not None
    cond = condition("latency:seconds=3")
    with anyio.fail_after(DEADLINE):
        async with memory_client(travel, task.id, cond, tmp_path, mode=mode, read_timeout_seconds=0.5) as (
            client,
            episode,
        ):
            with pytest.raises(MCPError) as timed_out:
                await client.call_tool("get_fare", {"flight_id": "AU-426"})
            # The client's own timeout code: had it waited the 3 s out, the call would have returned the fare.
            assert timed_out.value.error.code == -32001
            answer = await retry(Agent(client), task)
            calls = of_type(read_events(episode.trace.path), "tool_called")
            # The cancelled call is recorded once the server handles the cancellation; give it a bounded moment.
            deadline = time.monotonic() + WAIT_S
            while not any(c["outcome"] == "cancelled" for c in calls) and time.monotonic() < deadline:
                await anyio.sleep(0.05)
                calls = of_type(read_events(episode.trace.path), "tool_called")
    events = read_events(episode.trace.path)
    assert answer_matches(task.answer, answer)
    assert fired(events) == [("latency", "get_fare", 1, "before")]
    outcomes = [(c["slot"], c["outcome"], c["hazards"]) for c in of_type(events, "tool_called")]
    assert outcomes == [(1, "cancelled", [0]), (2, "ok", [])]
    cancelled = of_type(events, "tool_called")[0]
    assert cancelled["duration_ms"] < 3000 and cancelled["error"] == "cancelled by the client"


async def test_latency_without_a_client_timeout_just_delays(travel: LoadedScenario, tmp_path: Path) -> None:
    """No timeout on the client: the call waits the delay out and succeeds (seconds=0.3 keeps the test fast)."""
    async with memory_client(travel, "fare-class", condition("latency:seconds=0.3"), tmp_path) as (client, episode):
        began = time.monotonic()
        result = await client.call_tool("get_fare", {"flight_id": "AU-426"})
        waited = time.monotonic() - began
    assert not result.is_error and waited >= 0.3
    (call,) = of_type(read_events(episode.trace.path), "tool_called")
    assert call["outcome"] == "ok" and call["hazards"] == [0] and call["duration_ms"] >= 300

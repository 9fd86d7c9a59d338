"""A hazard defined by the agent's own actions (fail until the same call was retried), and the output drift modes
that rename fields or flag a result as stale, over the real server with a real client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_hazard.scenario import LoadedScenario
from tests.hazards.support import condition, fired, main_text, memory_client, read_events

pytestmark = pytest.mark.anyio
FARE = {"flight_id": "AU-426"}


async def test_fails_until_the_same_call_was_made_twice_before(travel: LoadedScenario, tmp_path: Path) -> None:
    cond = condition("transient_error:until_retries=2", seed=11)
    async with memory_client(travel, "fare-class", cond, tmp_path) as (client, episode):
        first = await client.call_tool("get_fare", FARE)
        other = await client.call_tool("get_fare", {"flight_id": "AU-412"})  # a different call is its own count
        second = await client.call_tool("get_fare", FARE)
        third = await client.call_tool("get_fare", FARE)
    assert [first.is_error, other.is_error, second.is_error, third.is_error] == [True, True, True, False]
    events = read_events(episode.trace.path)
    assert fired(events) == [("transient_error", "get_fare", slot, "before") for slot in (1, 2, 3)]


async def test_until_retries_ignores_the_seed(travel: LoadedScenario, tmp_path: Path) -> None:
    outcomes = []
    for seed in (0, 1, 99):
        cond = condition("transient_error:until_retries=1,probability=0.0", seed=seed)
        async with memory_client(travel, "fare-class", cond, tmp_path / str(seed)) as (client, _episode):
            outcomes.append([(await client.call_tool("get_fare", FARE)).is_error for _ in range(2)])
    assert outcomes == [[True, False]] * 3


async def test_alias_and_stale_flag_keep_every_value(travel: LoadedScenario, tmp_path: Path) -> None:
    served = {}
    for mode in ("alias", "stale_flag"):
        async with memory_client(travel, "fare-class", condition(f"output_drift:mode={mode}"), tmp_path / mode) as (
            client,
            _episode,
        ):
            result = await client.call_tool("get_fare", FARE)
        assert not result.is_error and result.structured_content is None
        served[mode] = json.loads(main_text(result))
    assert served["alias"] == {"Flight Id": "AU-426", "Price (EUR)": 167.0, "Fare Class": "Standard"}
    assert served["stale_flag"]["data"] == {"flight_id": "AU-426", "price_eur": 167.0, "fare_class": "Standard"}
    assert served["stale_flag"]["cache"]["stale"] is True


async def test_only_calls_a_hazard_can_read_are_kept(travel: LoadedScenario, tmp_path: Path) -> None:
    """The engine's memory of the agent's calls holds calls of targeted tools only: a clean episode's stays empty
    however long it runs, and a hazard still counts the calls of the tool it acts on."""
    async with memory_client(travel, "fare-class", condition(), tmp_path / "clean") as (client, episode):
        for _ in range(5):
            assert not (await client.call_tool("get_fare", FARE)).is_error
    assert episode.engine.history == []
    cond = condition("transient_error:until_retries=1,tools=get_fare")
    async with memory_client(travel, "fare-class", cond, tmp_path / "targeted") as (client, episode):
        await client.call_tool("find_city_code", {"city": "Orinth"})
        outcomes = [(await client.call_tool("get_fare", FARE)).is_error for _ in range(2)]
    assert outcomes == [True, False]
    assert [(record.tool, record.outcome) for record in episode.engine.history] == [
        ("get_fare", "rejected"),
        ("get_fare", "ok"),
    ]

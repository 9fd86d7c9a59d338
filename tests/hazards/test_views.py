"""The engine builds the views once and again only when a hazard changed what is listed: what is built on them (the
served surfaces, the name index, the tools/list result) is kept, and a drift is still served the moment it fires."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_hazard.scenario.files import LoadedScenario

from .support import condition, memory_client

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("hazards", [(), ("output_drift",), ("conflict",), ("transient_error",)])
async def test_views_are_built_once_while_nothing_changes_the_listing(
    travel: LoadedScenario, tmp_path: Path, hazards: tuple[str, ...]
) -> None:
    task = "fare-in-dollars" if hazards == ("conflict",) else "fare-class"
    async with memory_client(travel, task, condition(*hazards), tmp_path) as (client, episode):
        first = await client.list_tools()
        views = episode.views()
        for _ in range(3):
            await client.call_tool("get_fare", {"flight_id": "AU-426"})
            await client.call_tool("find_city_code", {"city": "Velmora"})
        assert episode.views() is views
        assert (await client.list_tools()).tools == first.tools


async def test_a_drift_is_listed_the_moment_it_fires(travel: LoadedScenario, tmp_path: Path) -> None:
    async with memory_client(travel, "fare-class", condition("spec_drift:mode=rename_tool"), tmp_path) as (
        client,
        episode,
    ):
        before = episode.views()
        assert "get_fare" in [tool.name for tool in (await client.list_tools()).tools]
        refused = await client.call_tool("get_fare", {"flight_id": "AU-426"})  # slot 1: the drift fires
        assert refused.is_error
        assert episode.views() is not before
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "get_fare_v2" in names and "get_fare" not in names
        after = episode.views()
        await client.call_tool("get_fare_v2", {"flight_id": "AU-426"})
        assert episode.views() is after  # drifted once, rebuilt once

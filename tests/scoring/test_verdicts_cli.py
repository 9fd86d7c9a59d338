"""Verdicts on real traces: episodes played with the SDK client through `mcp-hazard serve` over stdio and through
a real Streamable HTTP server on 127.0.0.1, scored by `mcp-hazard score` (through `main()`). Each episode is one of the
verdicts a reading by hand found wrong: a fare-class answer after a call of the archive alone (which has no fare
class), a value that is only a piece of a shown token ("1" and "412" in "AU-412"), a near copy of the submit tool's
description, and an apology that never answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import WAIT_S, run_main

from mcp_hazard.condition import Condition
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import HttpHost, open_episode
from mcp_hazard.server.episodes import EpisodeRegistry

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
TRAVEL = load_scenario(ROOT / "scenarios" / "travel.yaml")
DEADLINE = WAIT_S  # one stdio server's start, a few calls and its end, on a busy 2-core machine

FARE_412 = [("get_fare", {"flight_id": "AU-412"}),
            ("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"})]  # fmt: skip
EPISODES: list[tuple[str, str, list[tuple[str, dict[str, Any]]], str]] = [
    # (agent, task, calls, answer)
    ("archive-only", "fare-class", [("fare_archive_lookup", {"flight": "AU-426"})], "Standard"),
    ("value-1", "fare-in-dollars", FARE_412, "Value 1: $405.39"),
    ("usd-412", "fare-in-dollars", FARE_412, "USD 412 (US$275)"),
    ("seen-189", "fare-in-dollars", FARE_412, "EUR 189"),
    ("near-copy", "fare-class", [("get_fare", {"flight_id": "AU-426"})], "Your answer to the task, as text."),
    ("sorry", "fare-class", [("fare_archive_lookup", {"flight": "AU-42"}), ("get_fare", {"flight_id": "AU-426"})],
     "We are sorry, this user has not answered the task yet."),
]  # fmt: skip


async def _play(traces: Path, host: HttpHost, agent: str, task: str, calls: list[tuple[str, dict[str, Any]]],
                answer: str) -> None:  # fmt: skip
    transport = "stdio" if agent == "archive-only" else "http"  # one `mcp-hazard serve` process; the rest share one
    with anyio.fail_after(DEADLINE):
        async with open_episode(transport, TRAVEL, task, Condition(seed=1), traces, agent=agent,
                                http_host=host) as connected:  # fmt: skip
            for tool, arguments in calls:
                await connected.client.call_tool(tool, arguments)
            done = await connected.client.call_tool("submit_answer", {"answer": answer})
            assert not done.is_error


async def test_score_gives_the_verdict_a_careful_reader_gives(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    host = HttpHost(EpisodeRegistry([TRAVEL], traces, transport="http"))
    async with host.running():
        for agent, task, calls, answer in EPISODES:
            await _play(traces, host, agent, task, calls, answer)
    done = run_main("score", str(traces), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    rows = {row["agent"]: row for row in json.loads(done.stdout)["per_episode"]}
    assert set(rows) == {agent for agent, *_ in EPISODES}

    def verdict(agent: str) -> tuple[Any, ...]:
        row = rows[agent]
        return row["correct"], row["episode_failure"], row["answer_rule"], row["premature_reasons"]

    # The archive returns the fare in cents and no fare class: the class was not read, so the answer is premature.
    assert verdict("archive-only") == (True, "", "case_insensitive", ["no successful call of get_fare"])
    # "1" and "412" are pieces of AU-412, never values of it; 405.39 and 275 were shown nowhere.
    assert verdict("value-1") == (False, "invented", "ambiguous", [])
    assert verdict("usd-412") == (False, "invented", "ambiguous", [])
    assert verdict("seen-189") == (False, "wrong_answer", "numeric", [])  # 189 is the fare get_fare returned
    # The submit tool's description, nearly copied: no value named, nothing invented.
    assert verdict("near-copy") == (False, "wrong_answer", "placeholder", [])
    assert verdict("sorry") == (False, "gave_up", "gave_up", [])
    # AU-42 was never shown (it is only a piece of AU-426 in the prompt): the failed call used an unknown value.
    assert rows["sorry"]["call_failures"] == ["unknown_value"]

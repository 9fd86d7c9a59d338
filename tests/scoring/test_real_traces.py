"""The scorer on traces written by the real server, driven by scripted clients over the in-memory transport."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_hazard.condition import Condition
from mcp_hazard.hazards import parse_hazard_option
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scoring.collect import score_traces

pytestmark = pytest.mark.anyio
TRAVEL = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "travel.yaml")


def condition(*hazards: str, seed: int = 1) -> Condition:
    specs: list = []
    for text in hazards:
        parsed = parse_hazard_option(text)
        specs.extend(parsed if isinstance(parsed, list) else [parsed])
    return Condition(seed=seed, hazards=specs)


async def test_recovering_failing_and_premature_clients(tmp_path: Path) -> None:
    args = {"flight_id": "AU-426"}
    # recovering: retries through two transient failures, then answers
    async with open_episode("memory", TRAVEL, "fare-class", condition("transient_error:times=2"), tmp_path,
                            agent="retrier") as c:  # fmt: skip
        results = [await c.client.call_tool("get_fare", args) for _ in range(3)]
        assert [r.is_error for r in results] == [True, True, False]
        await c.client.call_tool("submit_answer", {"answer": "Standard"})
    # failing: gives up after the first failure
    async with open_episode("memory", TRAVEL, "fare-class", condition("transient_error:times=2"), tmp_path,
                            agent="quitter") as c:  # fmt: skip
        assert (await c.client.call_tool("get_fare", args)).is_error
        await c.client.call_tool("submit_answer", {"answer": "I don't know"})
    # premature: answers without any successful call
    async with open_episode("memory", TRAVEL, "fare-class", condition(), tmp_path, agent="guesser") as c:
        await c.client.call_tool("submit_answer", {"answer": "Standard"})
    # fallback: a permanent failure, then the sibling tool
    # (fare-in-dollars: the archive's cents carry the euro fare that task needs; it has no fare class)
    async with open_episode("memory", TRAVEL, "fare-in-dollars", condition("permanent_error"), tmp_path,
                            agent="fallback") as c:  # fmt: skip
        assert (await c.client.call_tool("get_fare", {"flight_id": "AU-412"})).is_error
        assert not (await c.client.call_tool("fare_archive_lookup", {"flight": "AU-412"})).is_error
        converted = {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}
        assert not (await c.client.call_tool("convert_currency", converted)).is_error
        await c.client.call_tool("submit_answer", {"answer": "204.59"})

    scored = score_traces([str(tmp_path)])
    by_agent = {s.agent: s for s in scored.scores}
    assert set(by_agent) == {"retrier", "quitter", "guesser", "fallback"}

    retrier = by_agent["retrier"]
    assert retrier.correct and not retrier.premature
    assert [(v.kind, v.recovered, v.path, v.calls_to_recover) for v in retrier.verdicts] == [
        ("transient_error", True, "retry", 2), ("transient_error", True, "retry", 1),
    ]  # fmt: skip
    assert [f.failure for f in retrier.failures] == ["injected", "injected"]

    quitter = by_agent["quitter"]
    assert not quitter.correct and quitter.episode_failure == "gave_up"
    assert [v.recovered for v in quitter.verdicts] == [False]

    guesser = by_agent["guesser"]
    assert guesser.correct and guesser.premature
    assert guesser.premature_reasons == ["no successful call of get_fare"]

    fallback = by_agent["fallback"]
    assert fallback.correct and not fallback.premature
    assert [(v.path, v.calls_to_recover) for v in fallback.verdicts] == [("fallback", 1)]
    assert scored.warnings == []

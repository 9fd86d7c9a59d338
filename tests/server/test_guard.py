"""The guarded harness (profile `guarded`, server/guard.py): answers refused while the evidence is incomplete or
contradictory or the answer names no single value, then accepted in canonical form; through a real SDK client in
memory, and through `mcp-hazard run` over HTTP with the report's harness gain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import run_main

from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scoring.collect import score_traces
from tests.hazards.support import REPO_ROOT, TRAVEL, condition

SCENARIO = load_scenario(TRAVEL)


def _events(trace_dir: Path) -> list[dict[str, Any]]:
    (path,) = trace_dir.glob("*.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_incomplete_evidence_and_vague_answers_are_refused_then_the_answer_is_canonical(tmp_path: Path) -> None:
    async def main() -> list[str]:
        said = []
        async with open_episode("memory", SCENARIO, "fare-class", condition(profile="guarded"), tmp_path) as ep:
            client = ep.client
            said.append(_text(await client.call_tool("submit_answer", {"answer": "Standard"})))  # nothing read yet
            await client.call_tool("get_fare", {"flight_id": "AU-999"})  # an error: still nothing read
            said.append(_text(await client.call_tool("submit_answer", {"answer": "Standard"})))
            await client.call_tool("get_fare", {"flight_id": "AU-426"})
            said.append(_text(await client.call_tool("submit_answer", {"answer": "Standard or Flex"})))
            said.append(_text(await client.call_tool("submit_answer", {"answer": "Sorted: economy seats"})))
            said.append(_text(await client.call_tool("submit_answer", {"answer": "**The fare class is Standard.**"})))
        return said

    said = anyio.run(main)
    assert said[0].startswith("Answer refused: the evidence is incomplete") and "get_fare" not in said[0]
    assert "get_fare has not yet returned a result" in said[1]  # named only once the agent met it
    assert said[2] == "Answer refused: it names several values (Standard, Flex); submit one."
    assert said[3].startswith("Answer refused: it names no value")
    assert said[4] == "Answer received. The episode is over."
    events = _events(tmp_path)
    refused = [e for e in events if e["type"] == "answer_refused"]
    assert [e["missing"] for e in refused] == [["get_fare"], ["get_fare"], [], []]
    (submitted,) = [e for e in events if e["type"] == "answer_submitted"]
    assert (submitted["answer"], submitted["submitted"]) == ("Standard", "**The fare class is Standard.**")
    (score,) = score_traces([str(tmp_path)]).scores
    assert score.correct and score.refused_answers == 4 and not score.premature


def test_contradictory_evidence_is_refused_until_cross_checked(tmp_path: Path) -> None:
    """fare-in-dollars under `conflict` on get_fare: the answer waits for the sibling fare_archive_lookup."""

    async def main() -> list[str]:
        said = []
        cond = condition("conflict", profile="guarded")
        async with open_episode("memory", SCENARIO, "fare-in-dollars", cond, tmp_path) as ep:
            client = ep.client
            await client.call_tool("get_fare", {"flight_id": "AU-412"})
            await client.call_tool("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"})
            said.append(_text(await client.call_tool("submit_answer", {"answer": "USD 204.59"})))
            await client.call_tool("fare_archive_lookup", {"flight": "AU-412"})
            said.append(_text(await client.call_tool("submit_answer", {"answer": "It costs USD 204.59."})))
        return said

    said = anyio.run(main)
    fired = [e for e in _events(tmp_path) if e["type"] == "hazard_fired"]
    assert fired and fired[0]["kind"] == "conflict"
    assert said[0].startswith("Answer refused: the evidence is contradictory; the result of get_fare")
    assert said[1] == "Answer received. The episode is over."
    (submitted,) = [e for e in _events(tmp_path) if e["type"] == "answer_submitted"]
    assert submitted["answer"] == "204.59"  # canonical: the one number, written plainly


def test_strict_and_guided_accept_any_answer_as_sent(tmp_path: Path) -> None:
    async def main() -> str:
        async with open_episode("memory", SCENARIO, "fare-class", condition(), tmp_path) as ep:
            return _text(await ep.client.call_tool("submit_answer", {"answer": "Standard or Flex"}))

    assert anyio.run(main) == "Answer received. The episode is over."
    (submitted,) = [e for e in _events(tmp_path) if e["type"] == "answer_submitted"]
    assert submitted["answer"] == "Standard or Flex" and "submitted" not in submitted


@pytest.mark.e2e
def test_run_measures_what_the_harness_adds_over_http(tmp_path: Path) -> None:
    """The naive agent answers without cross-checking a conflict: strict lets the premature answer through, the
    guarded harness refuses it (no answer). The recovering agent cross-checks and is accepted both ways."""
    out = tmp_path / "run"
    done = run_main("run", str(TRAVEL), "--task", "fare-in-dollars", "--hazard", "conflict", "--profile",
                    "strict,guarded", "--agent", "naive", "--agent", "recovering", "--seeds", "0-1", "--out", str(out),
                    "--no-progress", "--verbose", cwd=REPO_ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Harness gain per hazard family" in done.stdout
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    rows = {(r["agent"], r["family"]): r for r in report["harness_gain_by_family"]}
    naive = rows[("naive", "cross_source_conflict")]
    assert naive["pairs"] == 2 and naive["refused_answers"] == 2
    recovering = rows[("recovering", "cross_source_conflict")]
    assert recovering["refused_answers"] == 0 and recovering["accuracy_after"] == 1.0
    guarded = [e for e in report["per_episode"] if e["profile"] == "guarded" and e["agent"] == "naive"]
    assert guarded and all(not e["answered"] for e in guarded if e["condition"] == "conflict")


def test_a_guarded_trace_replays_identically(tmp_path: Path) -> None:
    """`mcp-hazard replay` re-sends the refused submissions and the answer as the agent wrote it, so the harness
    refuses and canonicalises the same way and the new trace equals the old one."""

    async def main() -> None:
        async with open_episode("memory", SCENARIO, "fare-class", condition(profile="guarded"), tmp_path) as ep:
            await ep.client.list_tools()  # as agents do: a listing the SDK makes on its own mid-call replays apart
            await ep.client.call_tool("submit_answer", {"answer": "Standard"})
            await ep.client.call_tool("get_fare", {"flight_id": "AU-426"})
            await ep.client.call_tool("submit_answer", {"answer": "The fare class is Standard."})

    anyio.run(main)
    (trace,) = tmp_path.glob("*.jsonl")
    done = run_main("replay", str(trace), cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert "identical to" in done.stdout

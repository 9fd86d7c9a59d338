"""rate_limit, through a real transport and the CLI: a 429 whose text and data say when to retry; a retry before
then is refused again and starts the wait again; the recovering agent waits as told and recovers, the naive agent
fails; validate and verify prove it solvable and biting on the shipped scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from conftest import REPO_ROOT, WAIT_S
from e2e.support import wait_for_trace_end

from mcp_hazard.cli import main
from mcp_hazard.condition import Condition
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.server.served_episode import SUBMIT_TOOL
from mcp_hazard.trace.reader import read_trace

TRAVEL = REPO_ROOT / "scenarios" / "travel.yaml"
WAIT = 0.3  # seconds: short, so the tests are quick


def _text(result: object) -> str:
    return " ".join(block.text for block in result.content)  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_an_early_retry_is_refused_again_and_a_retry_after_the_wait_goes_through(tmp_path: Path) -> None:
    loaded = load_scenario(TRAVEL)
    spec = HazardSpec(kind="rate_limit", params={"retry_after_s": WAIT})
    with anyio.fail_after(WAIT_S):
        async with open_episode("stdio", loaded, "fare-class", Condition(seed=0, hazards=[spec]), tmp_path) as ep:
            first = await ep.client.call_tool("get_fare", {"flight_id": "AU-426"})
            assert first.is_error and "Retry-After: 0.3 seconds" in _text(first)
            assert first.structured_content == {"error": "rate_limited", "retry_after_s": WAIT}
            early = await ep.client.call_tool("get_fare", {"flight_id": "AU-426"})
            assert early.is_error and "the limit starts again" in _text(early)
            assert early.structured_content == first.structured_content
            await anyio.sleep(WAIT)
            late = await ep.client.call_tool("get_fare", {"flight_id": "AU-426"})
            assert not late.is_error, _text(late)
            await ep.client.call_tool(SUBMIT_TOOL, {"answer": json.dumps(late.structured_content)})
    wait_for_trace_end(ep.trace_path)
    trace = read_trace(ep.trace_path)
    fired = [e for e in trace.events if e["type"] == "hazard_fired"]
    assert [(e["kind"], e["slot"], e["change"]) for e in fired] == [
        ("rate_limit", 1, {"error": "rate_limited", "retry_after_s": WAIT})
    ]  # the early refusal is the same limit acting again, not a new firing
    outcomes = [e["outcome"] for e in trace.events if e["type"] == "tool_called" and e["tool"] == "get_fare"]
    assert outcomes == ["rejected", "rejected", "ok"]
    [verdict] = score_episode(trace, loaded.model).verdicts
    assert (verdict.kind, verdict.recovered, verdict.path, verdict.calls_to_recover) == ("rate_limit", True, "retry", 2)


def test_run_recovering_waits_as_told_and_naive_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    argv = ["run", str(TRAVEL), "--task", "fare-class", "--agent", "naive", "--agent", "recovering",
            "--hazard", f"rate_limit:retry_after_s={WAIT}", "--seeds", "0", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    episodes = json.loads((out / "report.json").read_text())["per_episode"]
    hazarded = {e["agent"]: e for e in episodes if e["condition"] != "clean"}
    assert set(hazarded) == {"naive", "recovering"}
    [recovered] = hazarded["recovering"]["hazards"]
    assert hazarded["recovering"]["correct"] and recovered["recovered"] and recovered["path"] == "retry"
    [missed] = hazarded["naive"]["hazards"]
    assert not hazarded["naive"]["correct"] and not missed["recovered"]
    assert "rate_limit" in capsys.readouterr().out


def test_validate_and_verify_prove_it_solvable_and_biting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(REPO_ROOT / "scenarios"), "--hazard", "rate_limit", "--seeds", "0-2"]) == 0
    hazard = f"rate_limit:retry_after_s={WAIT}"
    assert main(["verify", str(TRAVEL), "--hazard", hazard, "--seeds", "0", "--concurrency", "4"]) == 0
    assert "all solvable, all biting" in capsys.readouterr().out

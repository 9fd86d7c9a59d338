"""lost_response on the shipped write scenario (scenarios/writes/orders.yaml), through real transports: the write
runs but the agent gets a timeout; the recovering agent checks list_orders and does not order twice, the naive agent
stops, and a blind retry is scored `duplicate_write`. validate refuses a `checked_by` that cannot check."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path

import anyio
import pytest
from conftest import REPO_ROOT, WAIT_S
from e2e.support import wait_for_trace_end
from mcp import Client

from mcp_hazard.cli import main
from mcp_hazard.condition import Condition
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import HttpHost, open_episode
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.server.served_episode import SUBMIT_TOOL
from mcp_hazard.trace.reader import read_trace

ORDERS = REPO_ROOT / "scenarios" / "writes" / "orders.yaml"


def _episodes(out: Path) -> list[dict]:
    return json.loads((out / "report.json").read_text())["per_episode"]


def test_run_over_http_recovering_checks_the_state_and_naive_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["run", str(ORDERS), "--agent", "naive", "--agent", "recovering", "--hazard", "lost_response",
            "--seeds", "0-1", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    hazarded = [e for e in _episodes(out) if e["condition"] == "lost_response"]
    assert len(hazarded) == 4
    for episode in hazarded:
        [verdict] = episode["hazards"]
        assert verdict["kind"] == "lost_response" and verdict["tool"] == "place_order"
        if episode["agent"] == "recovering":
            assert episode["correct"] and episode["answer"] == "ORD-7001"  # one order, read back from list_orders
            assert verdict["recovered"] and verdict["path"] == "check_state"
            assert episode["calls"] == 2  # the lost write and the check: no repeat
        else:
            assert not episode["correct"] and not verdict["recovered"]
            assert episode["episode_failure"] == "no_answer"
    assert "lost_response" in capsys.readouterr().out


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_blind_retry_orders_twice_and_is_a_duplicate_write(tmp_path: Path, transport: str) -> None:
    loaded = load_scenario(ORDERS)
    condition = Condition(seed=0, hazards=[HazardSpec(kind="lost_response")])
    host = HttpHost(EpisodeRegistry([loaded], tmp_path, transport="http")) if transport == "http" else None
    with anyio.fail_after(WAIT_S):
        async with (
            host.running() if host is not None else nullcontext(),
            open_episode(transport, loaded, "order-once", condition, tmp_path, http_host=host) as connected,  # type: ignore[arg-type]
        ):
            await blind_retry(connected.client)
    wait_for_trace_end(connected.trace_path)
    calls = [e for e in read_trace(connected.trace_path).events if e["type"] == "tool_called"]
    assert calls[0]["outcome"] == "lost" and calls[0]["result"]["order_id"] == "ORD-7001"  # it ran
    score = score_episode(read_trace(connected.trace_path), loaded.model)
    assert score.episode_failure == "duplicate_write" and not score.correct  # the right id, but two orders
    assert [(v.kind, v.recovered) for v in score.verdicts] == [("lost_response", False)]


async def blind_retry(client: Client) -> None:
    """What a retry-on-timeout client does: the same write again, then it answers with the first order's id."""
    first = await client.call_tool("place_order", {"sku": "LW-3310", "quantity": 24})
    assert first.is_error and "timed out" in first.content[0].text  # type: ignore[union-attr]
    again = await client.call_tool("place_order", {"sku": "LW-3310", "quantity": 24})
    assert not again.is_error and again.structured_content["order_id"] == "ORD-7002"  # type: ignore[index]
    listed = await client.call_tool("list_orders", {})
    assert [o["order_id"] for o in listed.structured_content["orders"]] == ["ORD-7001", "ORD-7002"]  # type: ignore[index]
    await client.call_tool(SUBMIT_TOOL, {"answer": "ORD-7001"})


@pytest.mark.anyio
async def test_strict_names_no_check_and_guided_names_it(tmp_path: Path) -> None:
    loaded = load_scenario(ORDERS)
    served = {}
    for profile in ("strict", "guided"):
        condition = Condition(seed=0, profile=profile, hazards=[HazardSpec(kind="lost_response")])
        with anyio.fail_after(WAIT_S):
            async with open_episode("memory", loaded, "order-once", condition, tmp_path / profile) as connected:
                result = await connected.client.call_tool("place_order", {"sku": "LW-3310", "quantity": 24})
        served[profile] = [block.text for block in result.content]  # type: ignore[union-attr]
    message = "Error: the request timed out after 30 seconds; no response was received from the service."
    assert served["strict"] == [message]
    assert served["guided"][0] == message and len(served["guided"]) == 2
    assert "check with list_orders before repeating it" in served["guided"][1]


def test_verify_proves_lost_response_solvable_and_biting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(ORDERS), "--hazard", "lost_response", "--seeds", "0-2"]) == 0
    assert "all solvable, all biting" in capsys.readouterr().out


def test_lost_response_needs_a_checkable_write(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", str(REPO_ROOT / "scenarios" / "travel.yaml"), "--hazard", "lost_response"])
    assert code == 2
    assert "needs a golden-path write and a read that shows it (checked_by)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (("checked_by: [list_orders]", "checked_by: [list_order]"),
         "tools[0].checked_by[0]: no tool named 'list_order' in this scenario (did you mean 'list_orders'?)"),
        (("    effect: write", "    effect: read"),
         "tools[0].checked_by: only a write (effect: write) has an effect to check"),
        (("checked_by: [list_orders]", "checked_by: [place_order]"),
         "tools[0].checked_by[0]: 'place_order' is a write: a check must only read"),
    ],
)  # fmt: skip
def test_validate_refuses_a_check_that_cannot_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], says: str
) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(ORDERS.read_text().replace(*change))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{path}:22:") and err.endswith(says) and "\n" not in err

"""The engine's per-call path: each tool's hazards are looked up by failpoint, and a failpoint where none acted
gives no verdict (the call then skips that half of the engine). What the agent gets and what the trace says
are the same either way; tests/hazards/test_kinds.py holds those."""

from __future__ import annotations

from pathlib import Path

from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.files import LoadedScenario

from .support import condition, new_episode


def test_a_tool_whose_hazards_act_after_gets_no_before_verdict(travel: LoadedScenario, tmp_path: Path) -> None:
    episode = new_episode(travel, "fare-class", condition("silent_wrong_value:tools=get_fare"), tmp_path)
    spec = episode.tools["get_fare"]
    call, verdict = episode.engine.before(spec, "get_fare", 1, {"flight_id": "AU-426"})
    assert verdict is None
    assert call.arguments == call.sent == {"flight_id": "AU-426"}
    after = episode.engine.after(call, run_behaviour(spec, call.arguments))
    assert (
        after is not None
        and after.touched == [0]
        and after.outcome.result != run_behaviour(spec, call.arguments).result
    )


def test_a_hazard_with_nothing_left_to_do_gives_no_verdict(travel: LoadedScenario, tmp_path: Path) -> None:
    """The wrong first reading was served: later calls of the tool are left alone, and no verdict is made for them."""
    episode = new_episode(travel, "fare-class", condition("silent_wrong_value:tools=get_fare"), tmp_path)
    spec = episode.tools["get_fare"]
    first, _ = episode.engine.before(spec, "get_fare", 1, {"flight_id": "AU-426"})
    assert episode.engine.after(first, run_behaviour(spec, first.arguments)) is not None
    later, _ = episode.engine.before(spec, "get_fare", 2, {"flight_id": "AU-426"})
    assert episode.engine.after(later, run_behaviour(spec, later.arguments)) is None


def test_a_schedule_not_due_gives_no_verdict(travel: LoadedScenario, tmp_path: Path) -> None:
    episode = new_episode(travel, "fare-class", condition("transient_error:tools=get_fare,times=1"), tmp_path)
    spec = episode.tools["get_fare"]
    _, first = episode.engine.before(spec, "get_fare", 1, {"flight_id": "AU-426"})
    assert first is not None and first.rejection is not None
    episode.engine.remember("get_fare", {"flight_id": "AU-426"}, "rejected")
    _, second = episode.engine.before(spec, "get_fare", 2, {"flight_id": "AU-426"})
    assert second is None


def test_a_tool_whose_hazards_act_before_gets_no_after_verdict(travel: LoadedScenario, tmp_path: Path) -> None:
    episode = new_episode(travel, "fare-class", condition("transient_error:tools=get_fare,times=1"), tmp_path)
    spec = episode.tools["get_fare"]
    call, verdict = episode.engine.before(spec, "get_fare", 1, {"flight_id": "AU-426"})
    assert verdict is not None and verdict.rejection is not None and verdict.touched == [0]
    assert episode.engine.after(call, run_behaviour(spec, call.arguments)) is None


def test_hazards_on_other_tools_give_no_verdict_at_all(travel: LoadedScenario, tmp_path: Path) -> None:
    episode = new_episode(travel, "fare-class", condition("transient_error:tools=get_fare"), tmp_path)
    others = [name for name in episode.tools if name != "get_fare"]
    assert others, "fare-class should have a tool besides get_fare"
    spec = episode.tools[others[0]]
    assert not episode.engine.acts_on(spec.name)
    call, verdict = episode.engine.before(spec, spec.name, 1, {})
    assert verdict is None
    assert episode.engine.after(call, run_behaviour(spec, {})) is None


def test_the_call_context_keeps_its_own_copies_of_the_arguments(travel: LoadedScenario, tmp_path: Path) -> None:
    """A hazard that rewrites the arguments it sees must not change what the agent sent (the trace's `arguments`)."""
    episode = new_episode(travel, "fare-class", condition("silent_wrong_value:tools=get_fare"), tmp_path)
    sent = {"flight_id": "AU-426"}
    call, _ = episode.engine.before(episode.tools["get_fare"], "get_fare", 1, sent)
    call.arguments["flight_id"] = "changed"
    assert sent == call.sent == {"flight_id": "AU-426"}
    assert call.arguments is not call.sent

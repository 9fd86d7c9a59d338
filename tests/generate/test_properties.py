"""Property: every scenario the generator makes from small knobs is valid and its golden path reaches the answer."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_hazard.generate import POLICIES, Knobs, build_graph, render_scenario
from mcp_hazard.load import parse_scenario
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.golden_check import run_golden_path


@st.composite
def knobs(draw: st.DrawFn) -> Knobs:
    depth = draw(st.integers(0, 4))
    core = 1 if depth == 0 else draw(st.integers(depth + 1, 9))
    return Knobs(
        core=core, depth=depth, connected=draw(st.integers(0, 4)), disconnected=draw(st.integers(0, 4)),
        seed=draw(st.integers(0, 2**63 - 1)), names=draw(st.sampled_from(POLICIES)),
        restate=draw(st.booleans()),
    )  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(knobs())
def test_every_generated_scenario_validates(k: Knobs) -> None:
    assert k.problem() is None
    scenario = parse_scenario(render_scenario(k), "generated.yaml")  # raises ScenarioError with every problem
    task = scenario.tasks[0]
    assert answer_matches(task.answer, run_golden_path(scenario, task).answer)
    assert len(task.golden_path.steps) == k.core
    assert build_graph(k).longest_path() == k.depth

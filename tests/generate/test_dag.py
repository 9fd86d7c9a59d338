"""The generator's structure, checked on the produced graph and, independently, on the scenario file it writes."""

from __future__ import annotations

import itertools

import pytest

from mcp_hazard.generate import Knobs, build_graph, build_scenario, max_core
from mcp_hazard.generate.dag import MAX_FUNCTIONS, MAX_INPUTS, TYPES, formula
from mcp_hazard.scenario.models import Scenario

from .support import file_graph

SHAPES = [(1, 1), (2, 2), (3, 3), (4, 2), (5, 3), (8, 3), (13, 3), (7, 6), (20, 4)]
KNOBS = [
    Knobs(core=core, depth=depth, connected=connected, disconnected=disconnected, seed=seed)
    for (core, depth), (connected, disconnected), seed in itertools.product(SHAPES, [(0, 0), (5, 5), (3, 1)], [0, 7])
]


def _id(knobs: Knobs) -> str:
    return f"c{knobs.core}d{knobs.depth}k{knobs.connected}u{knobs.disconnected}s{knobs.seed}"


@pytest.mark.parametrize("knobs", KNOBS, ids=_id)
def test_graph_has_the_asked_shape(knobs: Knobs) -> None:
    graph = build_graph(knobs)
    core = graph.role("core")
    assert len(core) == knobs.core
    assert graph.longest_path() == knobs.depth
    assert len(graph.role("connected")) == knobs.connected
    assert len(graph.role("disconnected")) == knobs.disconnected
    assert all(1 <= len(f.inputs) <= MAX_INPUTS and len(set(f.inputs)) == len(f.inputs) for f in graph.functions)
    # one sink: the last core function makes the target, and every other core output feeds another core function
    assert core[-1].output == graph.target
    consumed = {v for f in core for v in f.inputs}
    assert all(f.output in consumed for f in core[:-1])
    # the sources are exactly the core inputs no core function makes
    made = {f.output for f in core}
    assert set(graph.sources) == consumed - made
    # topological order: a function's inputs are sources or made by an earlier function
    seen = set(graph.sources)
    for f in core:
        assert set(f.inputs) <= seen
        seen.add(f.output)


@pytest.mark.parametrize("knobs", KNOBS, ids=_id)
def test_distractors_are_connected_or_not(knobs: Knobs) -> None:
    graph = build_graph(knobs)
    core_vars, core_types = graph.core_variables(), graph.core_types()
    for f in graph.role("connected"):
        assert set(f.inputs) & core_vars, f"{f.key} takes no core variable"
        assert graph.variables[f.output].type in core_types
        assert f.output not in core_vars
    for f in graph.role("disconnected"):
        used = [*f.inputs, f.output]
        assert not set(used) & core_vars
        assert not {graph.variables[v].type for v in used} & core_types, f"{f.key} uses a core type"


@pytest.mark.parametrize("knobs", KNOBS, ids=_id)
def test_file_has_the_asked_shape(knobs: Knobs) -> None:
    """The same checks from the scenario data alone: golden path = core, longest path = depth, distractor links."""
    data, graph, _names = build_scenario(knobs)
    scenario = Scenario.model_validate(data, strict=False)
    fg = file_graph(scenario)
    assert len(fg.core) == knobs.core
    assert fg.longest_path() == knobs.depth
    assert fg.target == fg.output[fg.core[-1]]
    assert len(fg.distractors) == knobs.connected + knobs.disconnected
    linked = [t for t in fg.distractors if set(fg.inputs[t]) & fg.core_variables]
    assert len(linked) == knobs.connected
    assert not {fg.output[t] for t in fg.distractors} & fg.core_variables
    assert scenario.tasks[0].answer.value == graph.variables[graph.target].value
    assert scenario.tasks[0].workflow == ("sequential" if knobs.core == knobs.depth else "mixed")


@pytest.mark.parametrize("knobs", KNOBS[:6], ids=_id)
def test_values_follow_the_formulas(knobs: Knobs) -> None:
    graph = build_graph(knobs)
    for f in graph.functions:
        out = graph.variables[f.output]
        assert formula(f.coefficients, [graph.variables[v].value for v in f.inputs], out.type) == out.value
        low, high = TYPES[out.type]
        assert low <= out.value <= high
        assert f.slip[:-1] != f.coefficients[:-1]


def test_max_core_is_a_full_tree_and_is_reachable() -> None:
    assert [max_core(d) for d in (1, 2, 3, 4)] == [1, 4, 13, 40]
    for depth in (1, 2, 3, 4):
        graph = build_graph(Knobs(core=max_core(depth), depth=depth, connected=0, disconnected=0))
        assert graph.longest_path() == depth
        assert Knobs(core=max_core(depth) + 1, depth=depth).problem() is not None


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        (Knobs(core=2, depth=3), "--depth 3 needs at least 3 core functions, got --core 2"),
        (Knobs(core=3, depth=1), "--core 3 needs --depth 2 or more"),
        (Knobs(core=5, depth=2), "--core 5 does not fit --depth 2"),
        (Knobs(core=0, depth=0), "--core must be between 1 and"),
        (Knobs(connected=MAX_FUNCTIONS + 1), f"--connected must be between 0 and {MAX_FUNCTIONS}"),
        (Knobs(disconnected=-1), "--disconnected must be between 0"),
        (Knobs(seed=2**63), "--seed must be between 0 and 2**63-1"),
    ],
)
def test_impossible_knobs_are_refused(knobs: Knobs, message: str) -> None:
    problem = knobs.problem()
    assert problem is not None and problem.startswith(message), problem
    with pytest.raises(ValueError, match=r"^--"):
        build_graph(knobs)


def test_the_graph_does_not_depend_on_names_or_restate() -> None:
    base = Knobs(core=6, depth=3, connected=3, disconnected=3, seed=11)
    graphs = [build_graph(Knobs(**{**base.__dict__, "names": n, "restate": r}))
              for n in ("meaningful", "random", "realistic") for r in (False, True)]  # fmt: skip
    assert all(g == graphs[0] for g in graphs)

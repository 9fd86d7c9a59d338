"""The generator's structure, checked on the produced graph and, independently, on the scenario file it writes."""

from __future__ import annotations

import itertools

import pytest

from mcp_hazard.generate import Knobs, build_graph, build_scenario
from mcp_hazard.generate.dag import MAX_FUNCTIONS, MAX_INPUTS, TYPES, formula
from mcp_hazard.generate.variable_names import POLICIES
from mcp_hazard.scenario.models import Scenario

from .support import file_graph

SHAPES = [(1, 0), (2, 1), (3, 2), (4, 1), (5, 2), (8, 2), (13, 2), (7, 6), (20, 3), (20, 1)]
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
    assert all(len(f.inputs) >= 1 and len(set(f.inputs)) == len(f.inputs) for f in graph.functions)
    made_by_core = {f.output for f in core}
    # besides other core functions' outputs, a function takes at most MAX_INPUTS given values; distractors at most
    # MAX_INPUTS inputs in all
    assert all(len(set(f.inputs) - made_by_core) <= MAX_INPUTS for f in core)
    assert all(len(f.inputs) <= MAX_INPUTS for f in graph.functions if f.role != "core")
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
    assert scenario.tasks[0].workflow == ("sequential" if knobs.core == knobs.depth + 1 else "mixed")
    assert scenario.generated is not None and (scenario.generated.core, scenario.generated.depth) == (
        knobs.core, knobs.depth)  # fmt: skip


@pytest.mark.parametrize("knobs", KNOBS[:6], ids=_id)
def test_values_follow_the_formulas(knobs: Knobs) -> None:
    graph = build_graph(knobs)
    for f in graph.functions:
        out = graph.variables[f.output]
        assert formula(f.coefficients, [graph.variables[v].value for v in f.inputs], out.type) == out.value
        low, high = TYPES[out.type]
        assert (low, high) == (100, 999) and low <= out.value <= high  # three-digit values, as in FuncBenchGen
    assert all(100 <= v.value <= 999 for v in graph.variables.values())


@pytest.mark.parametrize("core", [2, 5, 12, 40])
def test_depth_one_is_a_star(core: int) -> None:
    """Depth 1 (FuncBenchGen's star): one function takes the outputs of all the others, which take only given
    values; no cap on how many inputs that function has."""
    graph = build_graph(Knobs(core=core, depth=1, connected=0, disconnected=0, seed=3))
    *leaves, centre = graph.role("core")
    assert {leaf.output for leaf in leaves} <= set(centre.inputs)
    assert len(centre.inputs) >= core - 1
    assert all(set(leaf.inputs) <= set(graph.sources) for leaf in leaves)
    assert graph.longest_path() == 1


@pytest.mark.parametrize("core", [1, 2, 6, 10])
def test_depth_core_minus_one_is_a_path(core: int) -> None:
    """The deepest graph of `core` functions is a path: each function takes the previous one's output."""
    graph = build_graph(Knobs(core=core, depth=core - 1, connected=0, disconnected=0, seed=4))
    funcs = graph.role("core")
    assert all(funcs[i].output in funcs[i + 1].inputs for i in range(core - 1))
    assert graph.longest_path() == core - 1


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        (Knobs(core=2, depth=2), "--depth 2 needs at least 3 core functions (a path of 2 edges), got --core 2"),
        (Knobs(core=3, depth=0), "--core 3 needs --depth 1 or more"),
        (Knobs(core=0, depth=0), "--core must be between 1 and"),
        (Knobs(depth=-1), "--depth must be between 0 and"),
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
              for n in POLICIES for r in (False, True)]  # fmt: skip
    assert all(g == graphs[0] for g in graphs)

"""Generated files are valid scenarios: they load, the golden path reaches the answer, and tools fail silently."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from mcp_hazard.agents.normalise import parse_label_lines, unalias
from mcp_hazard.generate import Knobs, build_scenario, scenario_id, write_scenario
from mcp_hazard.generate.dag import TYPES
from mcp_hazard.generate.graph_scenario import problem_id
from mcp_hazard.generate.variable_names import POLICIES, REALISTIC_FIELDS, REALISTIC_NOUNS, readable
from mcp_hazard.hazards.output import alias_keys
from mcp_hazard.interventions.cause_effect import CAUSE_EFFECT, ENTITIES, base, familiar
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.golden_check import run_golden_path
from mcp_hazard.scenario.models import Scenario

from .support import file_graph


@pytest.fixture(params=[(p, r) for p in POLICIES for r in (False, True)], ids=lambda v: f"{v[0]}-restate{v[1]}")
def loaded(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Knobs, Scenario]:
    names, restate = request.param
    knobs = Knobs(core=6, depth=3, connected=4, disconnected=3, seed=5, names=names, restate=restate)
    path = write_scenario(knobs, tmp_path)
    assert path.name == "dag-s5.yaml"
    return knobs, load_scenario(path).model


def test_file_loads_and_the_golden_path_reaches_the_answer(loaded: tuple[Knobs, Scenario]) -> None:
    knobs, scenario = loaded
    task = scenario.tasks[0]
    run = run_golden_path(scenario, task)
    assert answer_matches(task.answer, run.answer)
    assert answer_matches(task.answer, f"{run.answer} ")
    assert not answer_matches(task.answer, str(int(run.answer) + 1))
    assert (task.answer.match, task.answer.tolerance) == ("numeric", 0)
    assert re.fullmatch(r"^[a-z0-9][a-z0-9_-]{0,63}$", scenario.id)
    assert scenario.id.endswith(f"-s{knobs.seed}")
    assert len(scenario.tools) == knobs.core + knobs.connected + knobs.disconnected
    assert [t.name for t in scenario.tools] == sorted(t.name for t in scenario.tools)


def test_prompt_gives_every_input_and_names_the_target(loaded: tuple[Knobs, Scenario]) -> None:
    _knobs, scenario = loaded
    fg = file_graph(scenario)
    prompt = scenario.tasks[0].prompt
    given = dict(re.findall(r"^- (\w+) = (\d+)$", prompt, flags=re.MULTILINE))
    assert {k: int(v) for k, v in given.items()} == fg.given
    assert f"find the value of {fg.target}." in prompt
    assert str(scenario.tasks[0].answer.value) not in given.values()


def test_a_wrong_input_gives_a_plausible_wrong_value_never_an_error(loaded: tuple[Knobs, Scenario]) -> None:
    _knobs, scenario = loaded
    run = run_golden_path(scenario, scenario.tasks[0])
    for (_step, arguments, right), step in zip(run.steps, scenario.tasks[0].golden_path.steps, strict=True):
        tool = scenario.tool(step.tool)
        assert tool is not None
        out = file_graph(scenario).output[tool.name]
        assert run_behaviour(tool, arguments).result == right
        for name in arguments:
            for delta in (1, -1, 1000):
                wrong = {**arguments, name: arguments[name] + delta}
                outcome = run_behaviour(tool, wrong)
                assert outcome.ok
                assert isinstance(outcome.result[out], int)
                assert outcome.result[out] != right[out], (tool.name, name, delta)
                assert 100 <= outcome.result[out] <= 999
                assert set(outcome.result) == {out}  # restatement is the server's (known values), not the tool's
        assert run_behaviour(tool, {k: float(v) for k, v in arguments.items()}).result == right


def test_wrong_values_are_random_not_a_formula() -> None:
    """FuncBenchGen: a wrong input returns a random incorrect value. Over every wrong value of one argument the
    results spread over the three-digit range (never the right one), instead of following a line."""
    knobs = Knobs(core=1, depth=0, connected=0, disconnected=0, seed=9)
    data, _graph, _names = build_scenario(knobs)
    scenario = Scenario.model_validate(data, strict=False)
    (tool,) = scenario.tools
    run = run_golden_path(scenario, scenario.tasks[0])
    ((_, arguments, right),) = run.steps
    out = file_graph(scenario).output[tool.name]
    name = next(iter(arguments))
    seen = [run_behaviour(tool, {**arguments, name: v}).result[out] for v in range(100, 1000) if v != arguments[name]]
    assert right[out] not in seen
    assert len(set(seen)) > 500  # 898 draws from 899 values: about 570 distinct if random, 1 to 899 if a formula
    steps = {b - a for a, b in itertools.pairwise(seen)}
    assert len(steps) > 100  # a linear slip formula would step by one constant (mod the range)


def test_every_value_stays_in_its_type_range() -> None:
    knobs = Knobs(core=8, depth=4, connected=5, disconnected=5, seed=2)
    data, graph, names = build_scenario(knobs)
    scenario = Scenario.model_validate(data, strict=False)
    by_name = {names.variables[k]: v for k, v in graph.variables.items()}
    for tool in scenario.tools:
        out = file_graph(scenario).output[tool.name]
        low, high = TYPES[by_name[out].type]
        arguments = {a: by_name[a].value for a in tool.input_schema["properties"]}
        for shift in (0, 1, 7, -3, 10**6):
            result = run_behaviour(tool, {k: v + shift for k, v in arguments.items()}).result[out]
            assert low <= result <= high


@pytest.mark.parametrize("policy", POLICIES)
def test_names_follow_the_policy_and_are_never_reused(policy: str) -> None:
    knobs = Knobs(core=13, depth=3, connected=20, disconnected=20, seed=3, names=policy)
    _data, graph, names = build_scenario(knobs)
    variables, tools = list(names.variables.values()), list(names.tools.values())
    assert len(set(variables)) == len(variables) and len(set(tools)) == len(tools)
    assert not set(variables) & set(tools)
    assert "submit_answer" not in tools
    assert all(re.fullmatch(r"[a-z][a-z0-9_]{0,62}", n) for n in variables + tools)
    if policy == "random":
        assert all(re.fullmatch(r"v_[a-z]{5}", n) for n in variables)
        assert all(re.fullmatch(r"fn_[a-z]{5}", n) for n in tools)
    elif policy == "meaningful":
        for key, var in graph.variables.items():
            assert re.fullmatch(rf"[a-z]+_{var.type}(_\d+)?", names.variables[key])
        assert all(names.tools[f.key] == f"compute_{names.variables[f.output]}" for f in graph.functions)
    elif policy == "realistic":
        assert all(n.split("_")[0] in REALISTIC_NOUNS and n.split("_", 1)[1].rstrip("_0123456789") in REALISTIC_FIELDS
                   for n in variables)  # fmt: skip
    else:
        assert all(base(n) in ENTITIES for n in variables)
        assert all(names.tools[f.key] == f"compute_{names.variables[f.output]}" for f in graph.functions)
        related = [f for f in graph.functions
                   if any(familiar(names.variables[f.output], names.variables[v]) for v in f.inputs)]  # fmt: skip
        if policy == "random-realistic":
            assert not related  # real entities, no familiar relation between a tool's inputs and its output
        else:
            # the tool computes the familiar cause from its effect: output = cause, some input = its effect
            reversed_ = [
                f
                for f in graph.functions
                if any((base(names.variables[f.output]), base(names.variables[v])) in CAUSE_EFFECT for v in f.inputs)
            ]
            assert names.contradicting == len(reversed_) >= 0.8 * len(graph.functions)


@pytest.mark.parametrize("policy", POLICIES)
def test_variable_names_survive_output_drift_labels(policy: str) -> None:
    """Output drift shows field names as labels (`Gross Weight Grams`); a careful agent reads them back by words."""
    _data, _graph, names = build_scenario(Knobs(core=13, depth=3, connected=30, disconnected=30, names=policy))
    for name in names.variables.values():
        assert readable(name)
        assert unalias(alias_keys({name: 1})) == {name: 1}, name
        assert parse_label_lines("\n".join(f"{k}: 1" for k in alias_keys({name: 1}))) == {name: 1}, name


def test_readable_refuses_names_a_label_cannot_give_back() -> None:
    assert readable("gross_weight_grams") and readable("v_abcde") and readable("final_count_2")
    assert not readable("adjusted_energy_j")  # 'j' inside 'adjusted': the words come back out of order
    assert not readable("v_w8fhb")  # 'W8Fhb' splits at the digit
    assert not readable("count_count")


def test_the_longest_scenario_id_fits_the_pattern() -> None:
    for names in POLICIES:
        knobs = Knobs(core=100, depth=99, connected=100, disconnected=100, seed=2**63 - 1, names=names, restate=True)
        assert knobs.problem() is None
        assert re.fullmatch(r"^[a-z0-9][a-z0-9_-]{0,63}$", scenario_id(knobs))
        assert re.fullmatch(r"^[a-z0-9][a-z0-9_-]{0,63}$", problem_id(knobs))
    ids = {scenario_id(Knobs(names=names)) for names in POLICIES}
    assert len(ids) == len(POLICIES)  # every policy has its own id part
    assert {problem_id(Knobs(names=names, restate=r)) for names in POLICIES for r in (False, True)} == {
        "dag-c4d2k2u2-s0"}  # fmt: skip

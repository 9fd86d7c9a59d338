"""Property: under every intervention (and every composition of two), the perturbed tool called with the mapped
arguments returns exactly what the original tool returns for the original arguments, for any valid original arguments.

Arguments are drawn by hypothesis from each tool's input schema, mixed with the values the scenario itself uses (its
table rows' `when` values and golden-path arguments, so most calls hit real rows) and kept only when the original
schema accepts them. Both calls go through the real `Episode.call_tool`: the intervened one by its served name, checked
against the served schema and mapped back with `Surface.to_inner`; the clean one by its original name.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcp_hazard.interventions.surface import properties
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.arguments import argument_problem
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.golden_check import run_golden_path
from mcp_hazard.scenario.models import TableBehaviour, ToolSpec
from mcp_hazard.server.served_episode import Episode

from .support import KINDS, PAIRS, RENAMING, episode, shipped

HYPOTHESIS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
SINGLE_EXAMPLES = 5  # per (intervention, scenario); each example checks every tool of the scenario
PAIR_EXAMPLES = 3  # per ordered pair; each example checks every tool of one drawn scenario
_ids = itertools.count()


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mapping-traces")


# -- arguments --------------------------------------------------------------------------------------------------------


@functools.cache
def _validator(loaded_id: str, tool: str) -> Draft202012Validator:
    spec = _spec(loaded_id, tool)
    return Draft202012Validator(spec.input_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _spec(loaded_id: str, tool: str) -> ToolSpec:
    loaded = next(s for s in shipped() if s.id == loaded_id)
    spec = loaded.model.tool(tool)
    assert spec is not None
    return spec


@functools.cache
def scenario_examples(loaded_id: str, tool: str) -> tuple[dict[str, Any], ...]:
    """Argument sets the scenario itself uses for `tool`: its golden-path calls and its table rows' `when`."""
    loaded = next(s for s in shipped() if s.id == loaded_id)
    found: list[dict[str, Any]] = []
    for task in loaded.model.tasks:
        run = run_golden_path(loaded.model, task)
        found += [
            args for step, (_, args, _) in zip(task.golden_path.steps, run.steps, strict=True) if step.tool == tool
        ]
    behaviour = _spec(loaded_id, tool).behaviour
    if isinstance(behaviour, TableBehaviour):
        found += [dict(row.when) for row in behaviour.rows]
    return tuple(found)


def value_of(schema: Any) -> st.SearchStrategy[Any]:
    """Values of one JSON Schema (the keywords the shipped scenarios use); the whole call is filtered afterwards."""
    if not isinstance(schema, dict):
        return st.none()
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        if schema.get("format") == "date":
            return st.dates().map(lambda d: d.isoformat())
        return st.text(max_size=12)
    if kind == "integer":
        low = schema.get("minimum", -(10**6))
        return st.integers(min_value=low, max_value=max(low, 10**6))
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1e6))
        floats = st.floats(min_value=low, max_value=1e6, allow_nan=False, exclude_min="exclusiveMinimum" in schema)
        return floats | st.integers(min_value=math.ceil(low), max_value=10**6)
    if kind == "array":
        low = schema.get("minItems", 0)
        return st.lists(value_of(schema.get("items")), min_size=low, max_size=low + 3)
    if kind == "object":
        return st.fixed_dictionaries({k: value_of(v) for k, v in properties(schema).items()})
    if kind == "boolean":
        return st.booleans()
    return st.none() | st.booleans() | st.integers() | st.text(max_size=8)


@functools.cache
def arguments_of(loaded_id: str, tool: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid original arguments: each property from the scenario's own values or its schema, an optional property
    present or not, sometimes a whole argument set the scenario uses laid over them; invalid sets are dropped."""
    spec = _spec(loaded_id, tool)
    props = properties(spec.input_schema)
    required = set(spec.input_schema.get("required") or [])
    examples = scenario_examples(loaded_id, tool)
    pools = {name: [e[name] for e in examples if name in e] for name in props}
    fields = {name: (st.sampled_from(pools[name]) | value_of(sub)) if pools[name] else value_of(sub)
              for name, sub in props.items()}  # fmt: skip
    drawn = st.fixed_dictionaries(
        {n: s for n, s in fields.items() if n in required},
        optional={n: s for n, s in fields.items() if n not in required},
    )
    if examples:
        drawn = st.tuples(drawn, st.none() | st.sampled_from(examples)).map(lambda pair: {**pair[0], **(pair[1] or {})})
    return drawn.filter(_validator(loaded_id, tool).is_valid)


# -- the property -----------------------------------------------------------------------------------------------------


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    """What the agent receives: every content block, the structured content and the error flag."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _same_results(served: Episode, clean: Episode, calls: list[tuple[str, dict[str, Any]]]) -> None:
    surfaces = {surface.inner: surface for surface in served.surfaces()}
    for tool, arguments in calls:
        surface = surfaces[tool]
        original = copy.deepcopy(arguments)
        mapped = surface.to_outer(copy.deepcopy(arguments))
        assert surface.to_inner(copy.deepcopy(mapped)) == original, (surface.name, mapped)
        problem = argument_problem(surface.input_schema, mapped)
        assert problem is None, f"{surface.name}: mapped arguments {mapped} break the served schema: {problem}"
        got = outcome(await served.call_tool(surface.name, mapped))
        want = outcome(await clean.call_tool(tool, original))
        assert got == want, f"{surface.name} ({tool}) with {mapped} (was {original}):\n{got}\n!=\n{want}"


def check(
    loaded: LoadedScenario, kinds: list[str], seed: int, calls: list[tuple[str, dict[str, Any]]], trace_dir: Path
) -> None:
    """Every call through one intervened episode (traced to `trace_dir`) and one clean episode."""
    served = episode(loaded, kinds, seed=seed, trace_dir=trace_dir, episode_id=f"mapping-{next(_ids)}")
    clean = episode(loaded, trace_dir=None, episode_id="clean")
    try:
        anyio.run(_same_results, served, clean, calls)
    finally:
        served.end("closed")


def draw_calls(data: st.DataObject, loaded: LoadedScenario) -> list[tuple[str, dict[str, Any]]]:
    return [(tool.name, data.draw(arguments_of(loaded.id, tool.name), label=tool.name)) for tool in loaded.model.tools]


@pytest.mark.parametrize("loaded", shipped(), ids=lambda s: s.id)
@pytest.mark.parametrize("kind", KINDS)
@settings(HYPOTHESIS, max_examples=SINGLE_EXAMPLES)
@given(data=st.data(), seed=st.integers(0, 2**63 - 1))
def test_each_intervention_maps_back_exactly(
    kind: str, loaded: LoadedScenario, data: st.DataObject, seed: int, trace_dir: Path
) -> None:
    check(loaded, [kind], seed, draw_calls(data, loaded), trace_dir)


@pytest.mark.parametrize("kinds", PAIRS, ids="+".join)
@settings(HYPOTHESIS, max_examples=PAIR_EXAMPLES)
@given(data=st.data(), seed=st.integers(0, 2**63 - 1))
def test_compositions_of_two_map_back_exactly(
    kinds: tuple[str, str], data: st.DataObject, seed: int, trace_dir: Path
) -> None:
    loaded = data.draw(st.sampled_from(shipped()), label="scenario")
    check(loaded, list(kinds), seed, draw_calls(data, loaded), trace_dir)


def _own_calls(loaded: LoadedScenario, first_only: bool) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for tool in loaded.model.tools:
        valid = [a for a in scenario_examples(loaded.id, tool.name) if _validator(loaded.id, tool.name).is_valid(a)]
        calls += [(tool.name, a) for a in (valid[:1] if first_only else valid)]
    return calls


@pytest.mark.parametrize("kind", KINDS)
def test_the_scenarios_own_calls_map_back(kind: str, trace_dir: Path) -> None:
    """No randomness: every golden-path call and table row of every tool of every shipped scenario."""
    for loaded in shipped():
        check(loaded, [kind], 11, _own_calls(loaded, first_only=False), trace_dir)


@pytest.mark.parametrize("kinds", PAIRS, ids="+".join)
def test_every_tool_maps_back_under_every_pair(kinds: tuple[str, str], trace_dir: Path) -> None:
    """No randomness: one call the scenario itself makes, for every tool of every shipped scenario."""
    for loaded in shipped():
        check(loaded, list(kinds), 11, _own_calls(loaded, first_only=True), trace_dir)


# -- what an agent that keeps the original interface meets ------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_original_call_under_each_intervention(kind: str) -> None:
    """The original name with the original arguments: refused (unknown tool, or the new required argument missing)
    where the interface changed; served exactly as before where it did not (reorder: arguments are named; substitute:
    only descriptions changed)."""
    travel = next(s for s in shipped() if s.id == "travel")
    args = {"flight_id": "AU-412"}
    served, clean = episode(travel, [kind], seed=3), episode(travel)

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        return outcome(await served.call_tool("get_fare", args)), outcome(await clean.call_tool("get_fare", args))

    got, want = anyio.run(both)
    if kind in RENAMING:
        assert got["isError"] and got["content"][0]["text"] == "Unknown tool 'get_fare'.", got
    elif kind == "augment":
        assert got["isError"] and "missing required argument" in got["content"][0]["text"], got
    else:
        assert kind in ("reorder", "substitute"), f"decide what the original call meets under {kind}"
        assert got == want


# -- a regression found by the collision property -------------------------------------------------------------------

FEES = """\
format: 1
id: fees
title: Fees
tools:
  - name: get_total
    description: A price with its fee and the fee's tax.
    input_schema:
      type: object
      properties:
        fee: {type: number, description: Fee in EUR}
        fee_amount: {type: number, description: Tax on the fee in EUR}
      required: [fee, fee_amount]
      additionalProperties: false
    behaviour:
      kind: compute
      result: {total: "{{ 100 + fee + fee_amount }}"}
tasks:
  - id: total
    prompt: What is the total with a fee of 3 and a tax of 1?
    answer: {value: 104, match: numeric}
    workflow: sequential
    golden_path:
      steps: [{id: t, tool: get_total, arguments: {fee: 3, fee_amount: 1}}]
      answer: "{{ t.total }}"
"""


def test_replace_keeps_two_arguments_apart_when_their_synonyms_meet(tmp_path: Path) -> None:
    """replace names an argument by word synonyms or, failing that, `<name>_value`: `fee` and `fee_amount`
    (amount -> value) both become `fee_value`, so the served schema has one argument where there were two and the
    mapping cannot give both back."""
    path = tmp_path / "fees.yaml"
    path.write_text(FEES, encoding="utf-8")
    loaded = load_scenario(path)
    surface = episode(loaded, ["replace"]).surfaces()[0]
    args = {"fee": 3, "fee_amount": 1}
    assert surface.to_inner(surface.to_outer(args)) == args, surface.input_schema

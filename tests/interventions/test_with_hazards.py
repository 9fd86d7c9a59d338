"""Interventions composed with hazards, on the real `Episode`: what a hazard says and accepts reaches the agent in
the served interface's terms, so a hazard stays recoverable under every intervention.

- An invocation error rejects the documented call with a message that names only served arguments, and the tool then
  accepts the changed shape in served names (through the surface built from what the tool accepts), returning what
  the original tool returns for the original call.
- Pagination's hint names the served page argument, and paging through it works.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import WAIT_S

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.drive import Brief
from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.hazards import parse_hazard_option
from mcp_hazard.hazards.interface import ArgumentChange
from mcp_hazard.interventions import Surface
from mcp_hazard.interventions.surface import properties, served_paths
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.trace.reader import read_trace

from .support import KINDS, argument_names, scenario

QUOTED = re.compile(r"'([A-Za-z0-9_.]+)'")
# (task, tool, arguments as authored, invocation mode, field): one case per mode on the travel scenario
CASES = [
    ("fare-class", "get_fare", {"flight_id": "AU-426"}, "renamed_field", "flight_id"),
    ("two-nights", "search_hotels", {"city_code": "CST", "night": "2026-03-14"}, "date_format", "night"),
    ("fare-in-dollars", "convert_currency", {"amount": 189, "from_currency": "EUR", "to_currency": "USD"},
     "type_as_string", "amount"),
]  # fmt: skip


def make(
    loaded: LoadedScenario, task_id: str, hazard: str | None, kinds: list[str], profile: str = "strict"
) -> Episode:
    task = loaded.model.task(task_id)
    assert task is not None
    hazards: Any = []
    if hazard is not None:
        parsed = parse_hazard_option(hazard)
        hazards = parsed if isinstance(parsed, list) else [parsed]
    condition = Condition(seed=2, profile=profile, hazards=hazards, interventions=kinds)
    return Episode(episode_id="composed", scenario=loaded, task=task, condition=condition, trace_dir=None,
                   transport="memory")  # fmt: skip


def served_surface(episode: Episode, tool: str, *, accepting: bool = False) -> Surface:
    return next(s for s in episode.surfaces(accepting=accepting) if s.inner == tool)


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def call(episode: Episode, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(WAIT_S):
        return await episode.call_tool(name, arguments)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[3])
async def test_invocation_error_speaks_served_names_and_accepts_the_changed_shape(
    kind: str, case: tuple[str, str, dict[str, Any], str, str]
) -> None:
    task_id, tool, original, mode, field = case
    travel = scenario("travel")
    clean = make(travel, task_id, None, [])
    expected = await call(clean, tool, original)
    assert not expected.is_error, text(expected)

    episode = make(travel, task_id, f"invocation_error:mode={mode},field={field},tools={tool}", [kind], "guided")
    listed = served_surface(episode, tool)
    documented = listed.to_outer(original)
    rejected = await call(episode, listed.name, documented)
    assert rejected.is_error, text(rejected)
    served = set(argument_names(listed.input_schema))
    accepting = served_surface(episode, tool, accepting=True)
    served |= set(argument_names(accepting.input_schema))
    named = {name.rsplit(".", 1)[-1] for name in QUOTED.findall(text(rejected)) if not re.fullmatch(r"[\d/.-]+", name)}
    assert named and named <= served, (text(rejected), sorted(served))

    changed = ArgumentChange(mode, field).from_original(original)  # type: ignore[arg-type]
    corrected = await call(episode, accepting.name, accepting.to_outer(changed))
    assert not corrected.is_error, text(corrected)
    assert corrected.structured_content == expected.structured_content
    assert accepting.name == listed.name  # the same served tool accepts both shapes' names


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["names=random", "replace", "rename"])
async def test_pagination_hint_names_the_served_page_argument(kind: str) -> None:
    travel = scenario("travel")
    episode = make(travel, "cheapest-trip", "pagination:page_size=2,tools=search_flights", [kind], "guided")
    surface = served_surface(episode, "search_flights")
    first = await call(episode, surface.name, surface.to_outer({"origin": "VLM", "destination": "CST",
                                                                "date": "2026-03-14"}))  # fmt: skip
    assert not first.is_error, text(first)
    (hint,) = [b.text for b in first.content if isinstance(b, types.TextContent) and b.text.startswith("Hint: ")]
    served_page = served_paths(surface, ["page"]).get("page", "page")  # dotted when nested (request.page_value)
    assert served_page.rsplit(".", 1)[-1] in argument_names(surface.input_schema)
    assert f"'{served_page}'" in hint and ("'page'" not in hint or served_page == "page"), hint
    arguments = surface.to_outer({"origin": "VLM", "destination": "CST", "date": "2026-03-14", "page": 2})
    second = await call(episode, surface.name, arguments)
    assert not second.is_error and second.structured_content is not None, text(second)
    assert second.structured_content["page"] == 2


@pytest.mark.anyio
async def test_a_declared_replacement_gives_way_when_a_hazard_may_change_the_tool() -> None:
    """The declaration has no place for a renamed argument, so under a hazard that may change the tool's interface
    the tool is served with a derived replacement, from the first listing to the last (no silent switch)."""
    logistics = scenario("logistics")
    declared = make(logistics, "reship-cheapest-quote", None, ["replace"])
    assert "rate_parcel" in [t.name for t in declared.served_tools()]
    hazard = "invocation_error:mode=renamed_field,field=carrier_code,tools=quote_shipping"
    episode = make(logistics, "reship-cheapest-quote", hazard, ["replace"])
    before = [t.name for t in episode.served_tools()]
    assert "rate_parcel" not in before
    surface = served_surface(episode, "quote_shipping")
    original = {"carrier_code": "PWF", "origin": "ARN", "destination": "SAL", "weight_kg": 18.4, "length_cm": 60,
                "width_cm": 40, "height_cm": 45}  # fmt: skip
    rejected = await call(episode, surface.name, surface.to_outer(original))
    assert rejected.is_error and "carrier_code" not in text(rejected).replace("carrier_code_", ""), text(rejected)
    assert [t.name for t in episode.served_tools()] == before
    accepting = served_surface(episode, "quote_shipping", accepting=True)
    changed = ArgumentChange("renamed_field", "carrier_code").from_original(original)
    corrected = await call(episode, accepting.name, accepting.to_outer(changed))
    assert not corrected.is_error, text(corrected)


INTERFACE_HAZARDS = ["invocation_error", "spec_drift", "pagination"]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["names=random", "names=realistic", "replace"])
@pytest.mark.parametrize("hazard", INTERFACE_HAZARDS)
async def test_recovering_agent_recovers_interface_hazards_without_seeing_original_argument_names(
    kind: str, hazard: str, tmp_path: Path
) -> None:
    """End to end over the in-memory transport: every travel task the hazard applies to, seeds 0-2, guided profile
    (hints too). The recovering agent answers correctly and is credited with the kind's recovery path, and no error
    or hint it received quotes an argument name that only the original interface has."""
    travel = scenario("travel")
    originals = {name for tool in travel.model.tools for name in properties(tool.input_schema)}
    played = 0
    for task in travel.model.tasks:
        for seed in (0, 1, 2):
            condition = Condition(seed=seed, profile="guided", interventions=[kind],
                                  hazards=[HazardSpec(kind=hazard)])  # fmt: skip
            brief = Brief(prompt=task.prompt, plan=task.golden_path, call_timeout_s=2.0)
            try:
                with anyio.fail_after(WAIT_S):
                    async with open_episode("memory", travel, task.id, condition, tmp_path, agent="recovering",
                                            episode_id=f"{task.id}-{seed}") as connected:  # fmt: skip
                        await make_agent("recovering").run(connected.client, brief)
            except UserError:
                continue  # the hazard applies to no tool of this task
            played += 1
            trace = read_trace(connected.trace_path)
            score = score_episode(trace, travel.model)
            assert score.correct and all(v.recovered for v in score.verdicts), (task.id, seed, score)
            served = {n for e in trace.of_type("tool_called") for n in _names(e["arguments"])}
            for event in trace.of_type("tool_called"):
                quoted = set(QUOTED.findall(str(event.get("error") or "")))
                leaked = {q for q in quoted if q in originals and q not in served}
                assert not leaked, (task.id, seed, event["error"])
    assert played >= 3


def _names(arguments: Any, prefix: str = "") -> set[str]:
    """Every argument name the agent sent, nested ones also as dotted paths."""
    out: set[str] = set()
    for key, value in (arguments or {}).items() if isinstance(arguments, dict) else ():
        path = f"{prefix}{key}"
        out |= {key, path}
        out |= _names(value, f"{path}.")
    return out

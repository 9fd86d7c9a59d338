"""Hint profiles and leaks.

strict vs guided: the same condition and actions give the same hazard_fired events (the same schedule) and the same
trace apart from the recorded profile; what the agent is served differs only in hints: a guided result or error
may carry extra trailing 'Hint: ...' text blocks, and strict never does.

Leaks: with every applicable hazard (`--hazard all`) in both profiles, for every task of every shipped scenario,
nothing served (listing, prompt, task resource, errors, hints, drifted results) gives away the canonical answer or
the golden path's answer template.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_hazard.condition import Condition
from mcp_hazard.hazards import REGISTRY, applicable_tools
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.files import LoadedScenario, scenario_files
from mcp_hazard.scenario.golden_check import run_golden_path
from mcp_hazard.scenario.models import Task
from mcp_hazard.server.served_episode import TASK_PROMPT_NAME

from .support import (
    DEADLINE,
    SCENARIOS_DIR,
    adapt_to_listing,
    blocks,
    condition,
    correct_from_error,
    fired,
    hazard_options,
    hint_of,
    main_text,
    memory_client,
    read_events,
)

pytestmark = pytest.mark.anyio

PROFILES = ("strict", "guided")

# One fixed call sequence per kind (identical in both profiles, whatever comes back).
FARE = {"flight_id": "AU-426"}
FLIGHTS = {"origin": "VLM", "destination": "CST", "date": "2026-03-14"}
SCRIPTS: dict[str, tuple[str, str, list[tuple[str, dict[str, Any]]]]] = {
    "transient_error": ("transient_error:error=rate_limited", "fare-class", [("get_fare", FARE)] * 3),
    "permanent_error": ("permanent_error", "fare-in-dollars",
                        [("get_fare", {"flight_id": "AU-412"}), ("fare_archive_lookup", {"flight": "AU-412"})]),
    "latency": ("latency:seconds=0.05", "fare-class", [("get_fare", FARE)] * 2),
    "rate_limit": ("rate_limit", "fare-class", [("get_fare", FARE)] * 2),  # the second call, too early, refused again
    "invocation_error": ("invocation_error", "cheapest-trip",
                         [("search_flights", FLIGHTS), ("search_flights", {**FLIGHTS, "date": "14/03/2026"}),
                          ("search_flights", {"origin_value": "VLM", "destination": "CST", "date": "2026-03-14"})]),
    "spec_drift": ("spec_drift", "fare-class",
                   [("get_fare", FARE), ("get_fare", {"flight_identifier": "AU-426"}), ("get_fare_v2", FARE)]),
    "output_drift": ("output_drift", "cheapest-trip",
                     [("find_city_code", {"city": "Velmora"}), ("search_flights", FLIGHTS)]),
    "conflict": ("conflict", "fare-in-dollars",
                 [("get_fare", {"flight_id": "AU-412"}), ("fare_archive_lookup", {"flight": "AU-412"})]),
    "silent_wrong_value": ("silent_wrong_value", "fare-class",
                           [("get_fare", {"flight_id": "AU-999"}), ("get_fare", FARE)]),
    "pagination": ("pagination", "cheapest-trip",
                   [("search_flights", FLIGHTS), ("search_flights", {**FLIGHTS, "page": 2}),
                    ("search_flights", {**FLIGHTS, "page": 9})]),
}  # fmt: skip
UNHINTED = {"latency", "silent_wrong_value"}  # they do not tell the agent anything, in either profile
OWN_SCENARIO = {"lost_response"}  # needs a write, which travel has not: test_lost_response.py checks its profiles


def _strip_profile(event: dict[str, Any]) -> dict[str, Any]:
    data = {k: v for k, v in event.items() if k not in ("ts", "duration_ms", "run")}
    if data["type"] == "episode_started":
        data["condition"] = {k: v for k, v in data["condition"].items() if k != "profile"}
    return data


def assert_differ_only_in_hints(strict: list[list[str]], guided: list[list[str]]) -> int:
    """Per call: guided = strict + trailing hint blocks. Returns how many hints guided served."""
    hints = 0
    assert len(strict) == len(guided)
    for plain, hinted in zip(strict, guided, strict=True):
        assert not any(text.startswith("Hint:") for text in plain), plain
        extra = hinted[len(plain) :]
        assert hinted[: len(plain)] == plain
        assert all(text.startswith("Hint: ") and len(text) > len("Hint: ") for text in extra), hinted
        hints += len(extra)
    return hints


@pytest.mark.parametrize("kind", sorted(set(REGISTRY) - OWN_SCENARIO))
async def test_strict_and_guided_differ_only_in_hints(kind: str, travel: LoadedScenario, tmp_path: Path) -> None:
    assert kind in SCRIPTS, f"hazard kind {kind!r} has no profile script"
    hazard, task_id, script = SCRIPTS[kind]
    served: dict[str, list[list[str]]] = {}
    events: dict[str, list[dict[str, Any]]] = {}
    for profile in PROFILES:
        cond = condition(hazard, seed=5, profile=profile)
        with anyio.fail_after(DEADLINE):
            async with memory_client(travel, task_id, cond, tmp_path / profile) as (client, episode):
                await client.list_tools()
                served[profile] = [blocks(await client.call_tool(tool, args)) for tool, args in script]
        events[profile] = read_events(episode.trace.path)

    assert fired(events["strict"]), f"{kind}: the script should make the hazard fire"
    assert fired(events["strict"]) == fired(events["guided"])
    assert [_strip_profile(e) for e in events["strict"]] == [_strip_profile(e) for e in events["guided"]]
    assert events["guided"][0]["condition"]["profile"] == "guided"
    hints = assert_differ_only_in_hints(served["strict"], served["guided"])
    if kind in UNHINTED:
        assert hints == 0
    else:
        assert hints >= 1, f"{kind}: guided served no hint"


# -- leaks ------------------------------------------------------------------------------------------------------------


@functools.cache
def _loaded(file: Path) -> LoadedScenario:
    """Each shipped file read once per test process: its ~40 parameters (task x kind) only read the model."""
    return load_scenario(file)


def _scenario_tasks() -> list[Any]:
    params: list[Any] = []
    for file in scenario_files([SCENARIOS_DIR]):
        loaded = _loaded(file)
        params.extend(pytest.param(file, task.id, id=f"{loaded.id}/{task.id}") for task in loaded.model.tasks)
    return params


def answer_texts(task: Task) -> list[str]:
    """The canonical answer as text, value by value. Skipped, because they could appear by coincidence in any
    served text (a seat count, a star rating, a price in a list) and prove nothing: answers shorter than 3
    characters, and purely numeric answers below 100."""
    values = task.answer.value if isinstance(task.answer.value, list) else [task.answer.value]
    texts = []
    for value in values:
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            if abs(value) < 100:
                continue
            forms = {str(value)}
            if float(value).is_integer():
                forms |= {str(int(value)), f"{float(value)}"}
            texts.extend(sorted(forms))
        elif len(str(value)) >= 3:
            texts.append(str(value))
    return texts


def contains(text: str, needle: str) -> bool:
    """`needle` as a whole value in `text`: '6:30' is not found in '16:30', nor '182' in '182.5' or 'AU-4182'."""
    return re.search(rf"(?<![\w.]){re.escape(needle)}(?!\w|\.\d)", text) is not None


def bad_arguments(good: dict[str, Any]) -> list[dict[str, Any]]:
    """Calls an agent gets wrong: nothing, an unknown argument, and each argument with a wrong JSON type."""
    calls: list[dict[str, Any]] = [{}, {**good, "unexpected_argument": 1}]
    for key, value in good.items():
        calls.append({**good, key: [value]})
    return calls


def clean_text(scenario: LoadedScenario, tool: str, arguments: dict[str, Any]) -> str:
    """What the behaviour itself answers for this call, with no hazard in the way."""
    spec = scenario.model.tool(tool)
    assert spec is not None
    outcome = run_behaviour(spec, arguments)
    return json.dumps(outcome.result if outcome.ok else outcome.error, ensure_ascii=False, indent=2)


LEAK_CONDITIONS = ["all", *sorted(REGISTRY)]  # every kind at once (as `--hazard all`), then each kind alone


async def _call_like_an_agent(
    client: Any, tool: str, args: dict[str, Any]
) -> list[tuple[types.CallToolResult, str, dict[str, Any]]]:
    """One golden call, then, if it is refused, a corrected call from the error/hint and a call adapted to a fresh
    listing, as an agent would try; every result is returned (so drifted results are examined too)."""
    result = await client.call_tool(tool, args)
    done = [(result, tool, args)]
    if result.is_error:
        fixed = correct_from_error(main_text(result), hint_of(result), args)
        if fixed is not None:
            result = await client.call_tool(tool, fixed)
            done.append((result, tool, args))
    if result.is_error:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        try:
            name, adapted = adapt_to_listing(tools, tool, args)
        except (AssertionError, ValueError):
            return done
        result = await client.call_tool(name, adapted)
        done.append((result, tool, args))
    return done


@pytest.mark.parametrize("hazard", LEAK_CONDITIONS)
@pytest.mark.parametrize(("file", "task_id"), _scenario_tasks())
async def test_nothing_served_leaks_the_answer(file: Path, task_id: str, hazard: str, tmp_path: Path) -> None:
    scenario = _loaded(file)
    task = scenario.model.task(task_id)
    assert task is not None
    if hazard != "all" and not applicable_tools(REGISTRY[hazard], scenario.model, task):
        pytest.skip(f"{hazard} applies to no tool of {task_id}")
    golden = run_golden_path(scenario.model, task)
    golden_calls = [(step.tool, args) for step, (_, args, _) in zip(task.golden_path.steps, golden.steps, strict=True)]
    needles = answer_texts(task)
    template = (
        task.golden_path.answer if isinstance(task.golden_path.answer, str) else json.dumps(task.golden_path.answer)
    )
    # Each kind alone is checked in the guided profile only: strict serves the same blocks minus the hints
    # (test_strict_and_guided_differ_only_in_hints), so guided shows everything strict does and more.
    for profile in PROFILES if hazard == "all" else ("guided",):
        cond = Condition(seed=0, profile=profile, hazards=hazard_options(hazard))  # type: ignore[arg-type]
        texts: list[tuple[str, str]] = []  # (where, text) that must not hold the answer
        # sleep=False: latency is recorded but not waited out (this test is about content, not timing)
        async with memory_client(scenario, task_id, cond, tmp_path / profile, sleep=False) as (client, episode):
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            texts.append(("listing", json.dumps([t.model_dump(mode="json") for t in tools.values()])))
            assert [p.name for p in (await client.list_prompts()).prompts] == [TASK_PROMPT_NAME]
            prompt = await client.get_prompt(TASK_PROMPT_NAME)
            texts.append(("prompt", json.dumps(prompt.model_dump(mode="json"))))
            (resource,) = (await client.list_resources()).resources
            read = await client.read_resource(resource.uri)
            texts.append(("resource", json.dumps(read.model_dump(mode="json"))))
            results = []
            for tool, args in golden_calls:
                results.extend(await _call_like_an_agent(client, tool, args))
            for tool, args in golden_calls:
                for bad in bad_arguments(args):
                    results.append((await client.call_tool(tool, bad), tool, bad))
            texts.append(
                ("re-listing", json.dumps([t.model_dump(mode="json") for t in (await client.list_tools()).tools]))
            )
            for result, tool, args in results:
                for text in blocks(result):
                    if text.startswith("Hint: "):
                        texts.append((f"hint of {tool}", text))
                    elif result.is_error:
                        texts.append((f"error of {tool}", text))
                    else:
                        # A right call may legitimately return the answer (a lookup); a hazard must not add it.
                        clean = clean_text(scenario, tool, args)
                        if not any(contains(clean, needle) for needle in needles):
                            texts.append((f"result of {tool} {args}", text))
        events = read_events(episode.trace.path)
        for where, text in texts:
            assert template not in text, f"{profile}: the golden answer template is served in the {where}"
            for needle in needles:
                assert not contains(text, needle), (
                    f"{profile}: the answer {needle!r} is served in the {where}: {text[:300]}"
                )
        assert all(e["type"] != "tool_called" or e["outcome"] != "fault" for e in events), "a hazard broke a tool"

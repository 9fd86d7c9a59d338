"""The MCP server through the SDK's in-memory client: what an agent sees, what the trace records, and bad input.

No mocks: a real `mcp.Client` talks to the real low-level `Server` in this process, in both protocol eras
(legacy = 2025-11-25 initialize handshake; modern = 2026-07-28, no handshake).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import WAIT_S
from mcp import Client

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.condition import Condition
from mcp_hazard.errors import ScenarioError
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import Connected, open_episode
from mcp_hazard.scenario.answers import answer_matches, canonical_text
from mcp_hazard.scenario.arguments import MAX_STRING_CHARS
from mcp_hazard.scenario.files import LoadedScenario, scenario_files
from mcp_hazard.scenario.models import Task
from mcp_hazard.server.served_episode import SUBMIT_SCHEMA, SUBMIT_TOOL, TASK_PROMPT_NAME

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TRAVEL = SCENARIOS_DIR / "travel.yaml"
MODES = ("legacy", "2026-07-28")
PROTOCOL_OF_MODE = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
CALL_DEADLINE = WAIT_S  # a hang guard, not a speed assertion


# -- helpers --------------------------------------------------------------------------------------------------------


_LOAD_ERRORS: dict[str, str] = {}


def _all_scenario_tasks() -> list[Any]:
    """(file, task id) for every task of every scenario in scenarios/; a file that does not load becomes one case
    that fails with the loader's message, rather than breaking collection of the whole module."""
    params: list[Any] = []
    for file in scenario_files([SCENARIOS_DIR]):
        try:
            loaded = load_scenario(file)
        except ScenarioError as exc:
            params.append(pytest.param(file, None, id=f"{file.stem}-does-not-load"))
            _LOAD_ERRORS[str(file)] = str(exc)
            continue
        params.extend(pytest.param(file, task.id, id=f"{loaded.id}/{task.id}") for task in loaded.model.tasks)
    return params


ALL_TASKS = _all_scenario_tasks()


def _load(file: Path, task_id: str | None) -> tuple[LoadedScenario, Task]:
    if task_id is None:
        pytest.fail(f"{file} does not load: {_LOAD_ERRORS.get(str(file))}")
    scenario = load_scenario(file)
    task = scenario.model.task(task_id)
    assert task is not None
    return scenario, task


@asynccontextmanager
async def episode(
    scenario: LoadedScenario, task: str, trace_dir: Path, mode: str = "legacy", seed: int = 0
) -> AsyncIterator[Connected]:
    async with open_episode("memory", scenario, task, Condition(seed=seed), trace_dir, mode=mode) as connected:
        yield connected


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def trace_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def trace_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace_lines(path)]


def calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool_called"]


async def call(client: Client, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(CALL_DEADLINE):
        return await client.call_tool(name, arguments)


# -- what is served -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_tools_listed_with_schemas_and_submit_answer(travel: LoadedScenario, tmp_path: Path, mode: str) -> None:
    async with episode(travel, "cheapest-trip", tmp_path, mode) as connected:
        listed = await connected.client.list_tools()
    served = {tool.name: tool for tool in listed.tools}
    expected = [tool.name for tool in travel.model.tools] + [SUBMIT_TOOL]
    assert [tool.name for tool in listed.tools] == expected
    for spec in travel.model.tools:
        tool = served[spec.name]
        assert tool.input_schema == spec.input_schema
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema == spec.output_schema
        assert tool.description == spec.description
    submit = served[SUBMIT_TOOL]
    assert submit.input_schema == SUBMIT_SCHEMA
    assert submit.input_schema["required"] == ["answer"]
    assert submit.description
    listings = [e for e in trace_events(connected.trace_path) if e["type"] == "tools_listed"]
    assert listings and listings[0]["tools"] == expected


@pytest.mark.parametrize("mode", MODES)
async def test_task_prompt_and_resource_are_readable(travel: LoadedScenario, tmp_path: Path, mode: str) -> None:
    task = travel.model.task("fare-in-dollars")
    assert task is not None
    async with episode(travel, task.id, tmp_path, mode) as connected:
        client = connected.client
        prompts = await client.list_prompts()
        assert [prompt.name for prompt in prompts.prompts] == [TASK_PROMPT_NAME]
        prompt = await client.get_prompt(TASK_PROMPT_NAME)
        resources = await client.list_resources()
        assert len(resources.resources) == 1
        uri = str(resources.resources[0].uri)
        read = await client.read_resource(uri)
    [message] = prompt.messages
    assert isinstance(message.content, types.TextContent)
    assert task.prompt.strip() in message.content.text
    assert SUBMIT_TOOL in message.content.text
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert contents.text == message.content.text
    reads = [e["via"] for e in trace_events(connected.trace_path) if e["type"] == "task_read"]
    assert reads == ["prompt", "resource"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("task_id", ["cheapest-trip", "fare-in-dollars", "two-nights", "fare-class"])
async def test_golden_agent_solves_every_travel_task(
    travel: LoadedScenario, tmp_path: Path, mode: str, task_id: str
) -> None:
    task = travel.model.task(task_id)
    assert task is not None
    async with episode(travel, task_id, tmp_path, mode, seed=11) as connected:
        with anyio.fail_after(CALL_DEADLINE):
            report = await run_golden_agent(connected.client, task)
    assert report.notes == []
    assert answer_matches(task.answer, report.answer), (report.answer, task.answer.value)
    events = trace_events(connected.trace_path)
    started = events[0]
    assert started["type"] == "episode_started"
    assert started["protocol_version"] == PROTOCOL_OF_MODE[mode]
    assert started["task"] == task_id
    assert started["condition"]["seed"] == 11
    assert [c["tool"] for c in calls(events)] == [step.tool for step in task.golden_path.steps]
    assert all(c["outcome"] == "ok" for c in calls(events))
    [submitted] = [e for e in events if e["type"] == "answer_submitted"]
    assert submitted["answer"] == report.answer
    assert events[-1] == {**events[-1], "type": "episode_ended", "reason": "answered"}
    assert [e["seq"] for e in events] == list(range(len(events)))


@pytest.mark.parametrize(("file", "task_id"), ALL_TASKS)
async def test_golden_agent_solves_every_shipped_task(file: Path, task_id: str | None, tmp_path: Path) -> None:
    scenario, task = _load(file, task_id)
    async with episode(scenario, task.id, tmp_path) as connected:
        with anyio.fail_after(CALL_DEADLINE):
            report = await run_golden_agent(connected.client, task)
    assert report.notes == []
    assert answer_matches(task.answer, report.answer), (report.answer, task.answer.value)


# -- bad arguments: isError naming the field, traced, never a protocol error ----------------------------------------

VIOLATIONS = [
    pytest.param("get_fare", {}, "flight_id", "missing required", id="missing-required"),
    pytest.param("find_city_code", {"city": 5}, "city", "not of type 'string'", id="number-for-string"),
    pytest.param("find_city_code", {"city": ["Velmora"]}, "city", "not of type 'string'", id="array-for-string"),
    pytest.param(
        "convert_currency",
        {"amount": "12", "from_currency": "EUR", "to_currency": "USD"},
        "amount",
        "not of type 'number'",
        id="string-for-number",
    ),
    pytest.param("get_fare", {"flight_id": "AU-412", "coupon": "X"}, "coupon", "", id="extra-property"),
    pytest.param("get_fare", {"flight_id": "AU 412"}, "flight_id", "pattern", id="pattern"),
    pytest.param(
        "convert_currency",
        {"amount": 5, "from_currency": "EUR", "to_currency": "JPY"},
        "to_currency",
        "not one of",
        id="enum",
    ),
    pytest.param(
        "convert_currency",
        {"amount": -1, "from_currency": "EUR", "to_currency": "USD"},
        "amount",
        "minimum",
        id="minimum",
    ),
    pytest.param(
        "search_flights",
        {"origin": "VLM", "destination": "CST", "date": "14/03/2026"},
        "date",
        "format",
        id="date-format",
    ),
    pytest.param(SUBMIT_TOOL, {}, "answer", "missing required", id="submit-missing-answer"),
    pytest.param(SUBMIT_TOOL, {"answer": 42}, "answer", "not of type 'string'", id="submit-number-answer"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tool", "arguments", "field", "says"), VIOLATIONS)
async def test_argument_violation_is_an_iserror_naming_the_field(
    travel: LoadedScenario, tmp_path: Path, mode: str, tool: str, arguments: dict[str, Any], field: str, says: str
) -> None:
    async with episode(travel, "fare-in-dollars", tmp_path, mode) as connected:
        result = await call(connected.client, tool, arguments)
        # the server keeps serving the same episode after bad input
        after = await call(connected.client, "get_fare", {"flight_id": "AU-412"})
    assert result.is_error is True
    message = text_of(result)
    assert f"'{field}'" in message, message
    assert says in message, message
    assert "\n" not in message  # one line
    assert after.is_error is not True
    assert after.structured_content == {"flight_id": "AU-412", "price_eur": 189.0, "fare_class": "Flex"}
    events = trace_events(connected.trace_path)
    bad = calls(events)[0]
    assert bad["tool"] == tool
    assert bad["outcome"] == "invalid_arguments"
    assert bad["arguments"] == arguments
    assert field in bad["error"]
    assert not [e for e in events if e["type"] == "answer_submitted"], (
        "an invalid submit_answer must not end the episode"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_is_an_iserror_traced_as_unknown_tool(
    travel: LoadedScenario, tmp_path: Path, mode: str
) -> None:
    async with episode(travel, "fare-class", tmp_path, mode) as connected:
        result = await call(connected.client, "get_fares", {"flight_id": "AU-426"})
        after = await call(connected.client, "get_fare", {"flight_id": "AU-426"})
    assert result.is_error is True
    assert "get_fares" in text_of(result)
    assert after.is_error is not True
    [unknown, known] = calls(trace_events(connected.trace_path))
    assert unknown == {**unknown, "tool": "get_fares", "slot": 1, "outcome": "unknown_tool", "result": None}
    assert unknown["arguments"] == {"flight_id": "AU-426"}
    assert known == {**known, "tool": "get_fare", "slot": 1, "outcome": "ok"}


@pytest.mark.parametrize("mode", MODES)
async def test_empty_tool_name_is_unknown_tool(travel: LoadedScenario, tmp_path: Path, mode: str) -> None:
    async with episode(travel, "fare-class", tmp_path, mode) as connected:
        result = await call(connected.client, "", {})
    assert result.is_error is True
    [event] = calls(trace_events(connected.trace_path))
    assert event["outcome"] == "unknown_tool"


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_outside_the_task_view_is_not_served_and_unknown(tmp_path: Path, mode: str) -> None:
    """A task that names its tools is served only those (plus submit_answer); the others are unknown to it."""
    text = TRAVEL.read_text(encoding="utf-8").replace(
        "  - id: fare-class\n", "  - id: fare-class\n    tools: [get_fare]\n"
    )
    file = tmp_path / "narrow.yaml"
    file.write_text(text, encoding="utf-8")
    narrow = load_scenario(file)
    async with episode(narrow, "fare-class", tmp_path, mode) as connected:
        listed = await connected.client.list_tools()
        outside = await call(connected.client, "find_city_code", {"city": "Velmora"})
        inside = await call(connected.client, "get_fare", {"flight_id": "AU-426"})
    assert [tool.name for tool in listed.tools] == ["get_fare", SUBMIT_TOOL]
    assert outside.is_error is True
    assert inside.is_error is not True
    assert [c["outcome"] for c in calls(trace_events(connected.trace_path))] == ["unknown_tool", "ok"]


# -- a 1 MB argument --------------------------------------------------------------------------------------------------

ONE_MB = 1_000_000
TRACE_LINE_LIMIT = 100_000  # a whole line must stay far below the 1 MB argument


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "make_arguments", "field"),
    [
        pytest.param("find_city_code", lambda big: {"city": big}, "city", id="valid-type"),
        pytest.param("get_fare", lambda big: {"flight_id": big}, "flight_id", id="pattern-violation"),
        pytest.param(
            "get_weather",
            lambda big: {"city_code": "VLM", "date": "2026-03-14", "note": big},
            "note",
            id="extra-property",
        ),
    ],
)
async def test_one_megabyte_argument_is_refused_by_the_size_limit_and_previewed_in_the_trace(
    travel: LoadedScenario, tmp_path: Path, mode: str, tool: str, make_arguments: Any, field: str
) -> None:
    """Arguments over the documented limits (arguments.py: 16 KiB per string) are refused before validation, hazards
    or behaviours see them, naming the argument and the limit; the trace keeps a short preview, not the megabyte."""
    big = "Velmora" + "x" * (ONE_MB - 7)
    async with episode(travel, "fare-in-dollars", tmp_path, mode) as connected:
        with anyio.fail_after(CALL_DEADLINE):
            result = await call(connected.client, tool, make_arguments(big))
        after = await call(connected.client, "get_fare", {"flight_id": "AU-412"})
    assert result.is_error is True
    assert f"argument '{field}'" in text_of(result) and str(MAX_STRING_CHARS) in text_of(result)
    assert after.is_error is not True
    assert after.structured_content is not None and after.structured_content["price_eur"] == 189.0
    lines = trace_lines(connected.trace_path)
    assert max(len(line) for line in lines) < TRACE_LINE_LIMIT, [len(line) for line in lines]
    [big_call, next_call] = calls([json.loads(line) for line in lines])
    assert big_call["tool"] == tool
    assert big_call["outcome"] == "invalid_arguments"
    assert isinstance(big_call["arguments"], str) and len(big_call["arguments"]) <= 200
    assert next_call["outcome"] == "ok"


# -- after the answer -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_calls_after_submit_answer_are_refused_and_traced_as_call_refused(
    travel: LoadedScenario, tmp_path: Path, mode: str
) -> None:
    async with episode(travel, "fare-class", tmp_path, mode) as connected:
        client = connected.client
        fare = await call(client, "get_fare", {"flight_id": "AU-426"})
        assert fare.is_error is not True
        submitted = await call(client, SUBMIT_TOOL, {"answer": "Standard"})
        assert submitted.is_error is not True
        late_tool = await call(client, "get_fare", {"flight_id": "AU-412"})
        late_submit = await call(client, SUBMIT_TOOL, {"answer": "Flex"})
        late_unknown = await call(client, "no_such_tool", {})
        # listing and reading the task are still answered (they are not calls)
        await client.list_tools()
    for late in (late_tool, late_submit, late_unknown):
        assert late.is_error is True
        assert "ended" in text_of(late)
    events = trace_events(connected.trace_path)
    types_ = [e["type"] for e in events]
    assert types_.count("answer_submitted") == 1
    assert [e["answer"] for e in events if e["type"] == "answer_submitted"] == ["Standard"]
    refused = [e for e in events if e["type"] == "call_refused"]
    assert [(e["tool"], e["arguments"]) for e in refused] == [
        ("get_fare", {"flight_id": "AU-412"}),
        (SUBMIT_TOOL, {"answer": "Flex"}),
        ("no_such_tool", {}),
    ], f"calls after submit_answer are missing from the trace; event types: {types_}"
    assert [c["tool"] for c in calls(events)] == ["get_fare"]


@pytest.mark.parametrize("mode", MODES)
async def test_refused_calls_do_not_take_call_slots(travel: LoadedScenario, tmp_path: Path, mode: str) -> None:
    async with episode(travel, "fare-class", tmp_path, mode) as connected:
        await call(connected.client, SUBMIT_TOOL, {"answer": "Standard"})
        await call(connected.client, "get_fare", {"flight_id": "AU-412"})
    events = trace_events(connected.trace_path)
    assert [e["slot"] for e in events if e["type"] == "answer_submitted"] == [1]
    assert calls(events) == []


# -- call slots -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_call_slots_count_per_tool_from_one_and_ignore_listings(
    travel: LoadedScenario, tmp_path: Path, mode: str
) -> None:
    sequence: list[tuple[str, dict[str, Any]]] = [
        ("get_fare", {"flight_id": "AU-412"}),
        ("find_city_code", {"city": "Velmora"}),
        ("get_fare", {"flight_id": 412}),  # invalid: still the agent's call, so it takes a slot
        ("nope", {}),
        ("get_fare", {"flight_id": "AU-999"}),  # a behaviour error
        ("find_city_code", {"city": "Castrane"}),
        ("nope", {}),
        ("get_fare", {"flight_id": "AU-418"}),
    ]
    async with episode(travel, "cheapest-trip", tmp_path, mode) as connected:
        client = connected.client
        for index, (tool, arguments) in enumerate(sequence):
            # listings between calls must never count as calls
            await client.list_tools()
            if index % 2:
                await client.list_tools(cache_mode="bypass")
                await client.get_prompt(TASK_PROMPT_NAME)
            result = await call(client, tool, arguments)
            assert isinstance(result, types.CallToolResult)
        await call(client, SUBMIT_TOOL, {"answer": "AU-418"})
    events = trace_events(connected.trace_path)
    assert [(c["tool"], c["slot"]) for c in calls(events)] == [
        ("get_fare", 1),
        ("find_city_code", 1),
        ("get_fare", 2),
        ("nope", 1),
        ("get_fare", 3),
        ("find_city_code", 2),
        ("nope", 2),
        ("get_fare", 4),
    ]
    assert [c["outcome"] for c in calls(events)] == [
        "ok",
        "ok",
        "invalid_arguments",
        "unknown_tool",
        "error",
        "ok",
        "unknown_tool",
        "ok",
    ]
    [submitted] = [e for e in events if e["type"] == "answer_submitted"]
    assert submitted["slot"] == 1
    assert sum(1 for e in events if e["type"] == "tools_listed") >= 1


# -- no protocol error for any bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_no_bad_input_raises_a_protocol_error(travel: LoadedScenario, tmp_path: Path, mode: str) -> None:
    """Every bad call above, back to back in one episode: each is a CallToolResult (the SDK raises MCPError on a
    JSON-RPC error, which would fail this test), and the episode still answers correctly at the end."""
    bad_calls: list[tuple[str, dict[str, Any]]] = [
        ("get_fare", {}),
        ("find_city_code", {"city": 5}),
        ("find_city_code", {"city": None}),
        ("find_city_code", {"city": {"nested": {"deeper": [1, 2, {"x": "y"}]}}}),
        ("get_fare", {"flight_id": "AU-412", "extra": True}),
        ("get_fare", {"flight_id": "../../etc/passwd"}),
        ("get_fare", {"flight_id": "AU-412\u0000"}),
        ("find_city_code", {"city": "{{ __import__('os') }}"}),
        ("find_city_code", {"city": "\ud7ff\u202e Velmora \U0001f600"}),
        ("convert_currency", {"amount": 1e308, "from_currency": "GBP", "to_currency": "USD"}),
        ("convert_currency", {"amount": 10**40, "from_currency": "EUR", "to_currency": "USD"}),
        ("nope", {"a": 1}),
        (SUBMIT_TOOL, {"answer": ["AU-418"]}),
        (SUBMIT_TOOL, {"answer": "AU-418", "confidence": 1}),
    ]
    async with episode(travel, "cheapest-trip", tmp_path, mode) as connected:
        for tool, arguments in bad_calls:
            result = await call(connected.client, tool, arguments)
            assert isinstance(result, types.CallToolResult), (tool, arguments)
        task = travel.model.task("cheapest-trip")
        assert task is not None
        with anyio.fail_after(CALL_DEADLINE):
            report = await run_golden_agent(connected.client, task)
    assert answer_matches(task.answer, report.answer)
    events = trace_events(connected.trace_path)
    assert len(calls(events)) >= len(bad_calls)
    assert events[-1]["type"] == "episode_ended"


# -- nothing served gives the answer away ---------------------------------------------------------------------------


def _answer_forms(value: Any) -> list[str]:
    """The ways a canonical answer could be written in served text."""
    if isinstance(value, list):
        return [form for item in value for form in _answer_forms(item)]
    if isinstance(value, bool) or value is None:
        return []  # 'true'/'false'/'null' are JSON words in every listing; they cannot leak anything
    forms = {str(value), canonical_text(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    if isinstance(value, int):
        forms.add(f"{value}.0")
    return sorted(form for form in forms if form.strip())


def _appears(form: str, text: str, *, ignore_case: bool) -> bool:
    pattern = rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)"
    return re.search(pattern, text, re.IGNORECASE if ignore_case else 0) is not None


def _templates(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if "{{" in value else []
    if isinstance(value, list):
        return [t for item in value for t in _templates(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _templates(item)]
    return []


@pytest.mark.parametrize(("file", "task_id"), ALL_TASKS)
async def test_answer_and_golden_path_are_never_served(file: Path, task_id: str | None, tmp_path: Path) -> None:
    scenario, task = _load(file, task_id)
    async with episode(scenario, task.id, tmp_path) as connected:
        client = connected.client
        served: dict[str, str] = {
            "tools/list": (await client.list_tools()).model_dump_json(by_alias=True),
            "prompts/list": (await client.list_prompts()).model_dump_json(by_alias=True),
            "prompts/get": (await client.get_prompt(TASK_PROMPT_NAME)).model_dump_json(by_alias=True),
            "instructions": client.instructions or "",
        }
        resources = await client.list_resources()
        served["resources/list"] = resources.model_dump_json(by_alias=True)
        for resource in resources.resources:
            read = await client.read_resource(str(resource.uri))
            served[f"resources/read {resource.uri}"] = read.model_dump_json(by_alias=True)
    # decode JSON escapes so the check sees the text an agent reads
    readable = {
        where: json.dumps(json.loads(text), ensure_ascii=False) if text.startswith("{") else text
        for where, text in served.items()
    }
    ignore_case = task.answer.match != "exact"
    for form in _answer_forms(task.answer.value):
        for where, text in readable.items():
            assert not _appears(form, text, ignore_case=ignore_case), (
                f"canonical answer {form!r} of {scenario.id}/{task.id} appears in {where}"
            )
    golden = task.golden_path
    secrets = _templates(golden.answer) + [t for step in golden.steps for t in _templates(step.arguments)]
    secrets.append(json.dumps([step.model_dump(mode="json") for step in golden.steps], ensure_ascii=False))
    for secret in secrets:
        for where, text in {**readable, **served}.items():
            assert secret not in text, f"golden path text {secret!r} of {scenario.id}/{task.id} appears in {where}"
    for where, text in readable.items():
        assert "golden_path" not in text, where
        assert "{{" not in text, f"a template leaks into {where}"

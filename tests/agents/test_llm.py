"""The LLM agent against a fake OpenAI-compatible endpoint over real HTTP, driving the real mcp-hazard server (in
memory) on the travel scenario: what the model is sent, what reaches the trace, and every failure a user can meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_hazard.agents.base import AgentReport, Brief
from mcp_hazard.agents.llm import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MAX_TURNS,
    ENV_MODEL,
    ENV_TEMPERATURE,
    ENV_TIMEOUT_S,
    LlmAgent,
    LlmEndpointError,
)
from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.hazards import parse_hazard_option
from mcp_hazard.runner.transports import free_port, open_episode
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.load import LoadedScenario, load_scenario
from mcp_hazard.server.episode import SUBMIT_TOOL
from mcp_hazard.trace.reader import Trace, read_trace

from .fake_llm import FakeLlm, Turn, call, http_reply, reply, tool_calls

TRAVEL = Path(__file__).resolve().parents[2] / "scenarios" / "travel.yaml"
TASK = "fare-class"  # "Which fare class is flight AU-426 sold in?" -> Standard (get_fare)
MODEL = "fake-model"
DEADLINE_S = 30.0  # a hang guard, not a speed assertion
ALL_ENV = (ENV_BASE_URL, ENV_MODEL, ENV_API_KEY, ENV_MAX_TURNS, ENV_TEMPERATURE, ENV_TIMEOUT_S)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own MCP_HAZARD_LLM_* settings must not leak into the tests."""
    for name in ALL_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def travel() -> LoadedScenario:
    return load_scenario(TRAVEL)


def condition(*hazards: str) -> Condition:
    specs: list[HazardSpec | str] = []
    for text in hazards:
        parsed = parse_hazard_option(text)
        specs.extend(parsed if isinstance(parsed, list) else [parsed])
    return Condition(hazards=specs)  # type: ignore[arg-type]


@dataclass
class Run:
    report: AgentReport
    fake: FakeLlm
    trace: Trace

    def calls(self, tool: str) -> list[dict[str, Any]]:
        return [e for e in self.trace.of_type("tool_called") if e["tool"] == tool]

    def answers(self) -> list[str]:
        return [e["answer"] for e in self.trace.of_type("answer_submitted")]


def task_prompt(travel: LoadedScenario) -> str:
    task = travel.model.task(TASK)
    assert task is not None
    return task.prompt


async def run_agent(
    travel: LoadedScenario,
    tmp_path: Path,
    script: list[Turn],
    *hazards: str,
    prompt: str | None = None,
    call_timeout_s: float = 5.0,
    **agent_options: Any,
) -> Run:
    """One episode: the fake endpoint plays `script`, the agent drives the real server in memory.

    An `LlmEndpointError` is caught inside the client's block and raised after it: raised through the block, the
    SDK client's task group would wrap it in an ExceptionGroup.
    """
    fake = FakeLlm(script)
    failure: LlmEndpointError | None = None
    with anyio.fail_after(DEADLINE_S):
        async with fake.running():
            options = {"base_url": fake.base_url, "model": MODEL, **agent_options}
            agent = LlmAgent(**options)
            brief = Brief(prompt=task_prompt(travel) if prompt is None else prompt, call_timeout_s=call_timeout_s)
            async with open_episode("memory", travel, TASK, condition(*hazards), tmp_path, agent="llm") as connected:
                try:
                    report = await agent.run(connected.client, brief)
                except LlmEndpointError as exc:
                    failure = exc
    assert fake.problems == []
    if failure is not None:
        raise failure
    return Run(report, fake, read_trace(connected.trace_path))


def tool_messages(request: dict[str, Any]) -> dict[str, str]:
    """tool_call_id -> content of every tool message in one request."""
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


# -- 1. the happy path ----------------------------------------------------------------------------------------------


async def test_tool_call_then_submit(travel: LoadedScenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Explicit arguments beat the environment; what is not given explicitly comes from it.
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:9/v1")
    monkeypatch.setenv(ENV_MODEL, "env-model")
    monkeypatch.setenv(ENV_TEMPERATURE, "0.5")
    script = [
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c1")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c2")),
    ]
    run = await run_agent(travel, tmp_path, script, api_key="sk-test")

    assert run.report.answer == "Standard"
    assert run.report.calls == 2
    assert run.report.notes == ["usage: 2 model turns, 20 prompt + 10 completion tokens"]
    assert [(e["arguments"], e["outcome"]) for e in run.calls("get_fare")] == [({"flight_id": "AU-426"}, "ok")]
    assert run.answers() == ["Standard"]
    assert len(run.trace.of_type("tools_listed")) == 2  # re-listed before every model turn

    first, second = run.fake.requests
    assert first["model"] == MODEL
    assert first["temperature"] == 0.5
    assert first["tool_choice"] == "auto"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == task_prompt(travel)
    tools = {t["function"]["name"]: t for t in first["tools"]}
    assert {"get_fare", "fare_archive_lookup", SUBMIT_TOOL} <= set(tools)
    assert tools["get_fare"]["type"] == "function"
    assert tools["get_fare"]["function"]["description"].startswith("Current fare")
    parameters = tools["get_fare"]["function"]["parameters"]
    assert parameters["required"] == ["flight_id"]
    assert parameters["properties"]["flight_id"]["pattern"] == "^AU-[0-9]{3}$"
    assert run.fake.headers[0]["authorization"] == "Bearer sk-test"

    assistant = second["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["id"] == "c1"
    assert assistant["tool_calls"][0]["function"]["name"] == "get_fare"
    result = tool_messages(second)["c1"]
    assert "Standard" in result and "167" in result
    assert not result.startswith("Tool error")


# -- 2. a transient error the model retries -------------------------------------------------------------------------


async def test_transient_error_is_shown_to_the_model(travel: LoadedScenario, tmp_path: Path) -> None:
    script = [
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c1")),
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c2")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c3")),
    ]
    run = await run_agent(travel, tmp_path, script, "transient_error:times=1,tools=get_fare")

    calls = run.calls("get_fare")
    assert [c["outcome"] for c in calls] == ["rejected", "ok"]
    assert [e["kind"] for e in run.trace.of_type("hazard_fired")] == ["transient_error"]
    error = calls[0]["error"]
    assert error
    failed = tool_messages(run.fake.requests[1])["c1"]
    assert failed.startswith("Tool error: ")
    assert error in failed
    assert "Standard" in tool_messages(run.fake.requests[2])["c2"]
    assert run.report.answer == "Standard"
    assert run.answers() == ["Standard"]


async def test_call_timeout_is_shown_to_the_model(travel: LoadedScenario, tmp_path: Path) -> None:
    script = [
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c1")),
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c2")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c3")),
    ]
    run = await run_agent(travel, tmp_path, script, "latency:seconds=5,slots=1,tools=get_fare", call_timeout_s=0.3)

    timed_out = tool_messages(run.fake.requests[1])["c1"]
    assert timed_out.startswith("Tool error: the call failed:")
    assert "MCP error -32001" in timed_out
    assert any("MCP error -32001" in note for note in run.report.notes)
    assert "Standard" in tool_messages(run.fake.requests[2])["c2"]
    assert run.report.answer == "Standard"


async def test_tools_are_relisted_after_a_drift(travel: LoadedScenario, tmp_path: Path) -> None:
    script = [
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c1")),
        tool_calls(call("get_fare", {"flight_identifier": "AU-426"}, "c2")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c3")),
    ]
    run = await run_agent(travel, tmp_path, script, "spec_drift:mode=renamed_field,tools=get_fare")

    def get_fare_fields(request: dict[str, Any]) -> list[str]:
        (tool,) = [t for t in request["tools"] if t["function"]["name"] == "get_fare"]
        return sorted(tool["function"]["parameters"]["properties"])

    assert get_fare_fields(run.fake.requests[0]) == ["flight_id"]
    assert get_fare_fields(run.fake.requests[1]) == ["flight_identifier"]  # the model sees the drifted schema
    assert [c["outcome"] for c in run.calls("get_fare")] == ["rejected", "ok"]
    assert tool_messages(run.fake.requests[1])["c1"].startswith("Tool error: ")
    assert run.report.answer == "Standard"


# -- 3. malformed arguments from the model --------------------------------------------------------------------------


async def test_malformed_arguments_become_a_tool_message(travel: LoadedScenario, tmp_path: Path) -> None:
    script = [
        tool_calls(
            call("get_fare", '{"flight_id": "AU-426"', "bad-json"),
            call("get_fare", '["AU-426"]', "not-an-object"),
        ),
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "good")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "done")),
    ]
    run = await run_agent(travel, tmp_path, script)

    answered = tool_messages(run.fake.requests[1])
    assert set(answered) == {"bad-json", "not-an-object"}  # every tool call gets its tool message
    assert "not valid JSON" in answered["bad-json"]
    assert "must be a JSON object, got list" in answered["not-an-object"]
    assert all("The tool was not called" in text for text in answered.values())
    assert len(run.calls("get_fare")) == 1  # malformed calls never reach the server
    assert sum("malformed arguments" in note for note in run.report.notes) == 2
    assert run.report.answer == "Standard"
    assert run.report.calls == 2


# -- 4. a plain answer without a tool call --------------------------------------------------------------------------


async def test_plain_content_is_submitted_as_the_answer(travel: LoadedScenario, tmp_path: Path) -> None:
    # An empty brief prompt makes the agent read the task from the server's `task` prompt.
    run = await run_agent(travel, tmp_path, [reply("  Standard\n")], prompt="")

    assert run.report.answer == "Standard"
    assert run.answers() == ["Standard"]
    assert [e["tool"] for e in run.trace.of_type("tool_called")] == []
    assert len(run.trace.of_type("task_read")) == 1
    (request,) = run.fake.requests
    assert task_prompt(travel).strip() in request["messages"][1]["content"]


async def test_empty_reply_gets_a_nudge(travel: LoadedScenario, tmp_path: Path) -> None:
    run = await run_agent(travel, tmp_path, [reply(""), reply("Standard")])

    assert run.report.answer == "Standard"
    assert run.fake.requests[1]["messages"][-1]["role"] == "user"
    assert any("neither text nor tool calls" in note for note in run.report.notes)


# -- 5. out of turns ------------------------------------------------------------------------------------------------


async def test_max_turns_without_an_answer(
    travel: LoadedScenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_MAX_TURNS, "3")
    script = [tool_calls(call("get_fare", {"flight_id": "AU-426"}, f"c{n}")) for n in range(1, 4)]
    run = await run_agent(travel, tmp_path, script)

    assert run.report.answer is None
    assert "no answer after 3 model turns (MCP_HAZARD_LLM_MAX_TURNS)" in run.report.notes
    assert len(run.fake.requests) == 3
    assert len(run.calls("get_fare")) == 3
    assert run.answers() == []


# -- 6. a broken endpoint -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        (http_reply(500, "internal error\nTraceback: boom " + "x" * 2000), "HTTP 500: internal error Traceback: boom"),
        (http_reply(200, "<html>not json</html>"), "HTTP 200 but the body is not JSON: <html>"),
        (http_reply(200, '{"object": "error"}'), "not a chat completion"),
    ],
    ids=["status-500", "not-json", "not-a-completion"],
)
async def test_endpoint_failure_is_one_line(travel: LoadedScenario, tmp_path: Path, turn: Turn, expected: str) -> None:
    with pytest.raises(LlmEndpointError) as caught:
        await run_agent(travel, tmp_path, [turn], api_key="sk-secret")
    message = str(caught.value)
    assert isinstance(caught.value, UserError)
    assert "\n" not in message
    assert expected in message
    assert "/v1/chat/completions" in message
    assert len(message) < 400
    assert "sk-secret" not in message


async def test_unreachable_endpoint_is_one_line(travel: LoadedScenario, tmp_path: Path) -> None:
    agent = LlmAgent(base_url=f"http://127.0.0.1:{free_port()}/v1", model=MODEL)
    with anyio.fail_after(DEADLINE_S):
        async with open_episode("memory", travel, TASK, Condition(), tmp_path) as connected:
            with pytest.raises(LlmEndpointError, match=r"cannot connect") as caught:
                await agent.run(connected.client, Brief(prompt=task_prompt(travel)))
    assert "\n" not in str(caught.value)


# -- 7. configuration errors ----------------------------------------------------------------------------------------


def test_missing_model_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:11434/v1")
    with pytest.raises(UserError) as caught:
        LlmAgent()
    message = str(caught.value)
    assert message.startswith("MCP_HAZARD_LLM_MODEL is not set")
    assert "\n" not in message


def test_missing_base_url_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "qwen2.5:7b")
    monkeypatch.setenv(ENV_BASE_URL, "  ")  # blank counts as unset
    with pytest.raises(UserError, match=r"^MCP_HAZARD_LLM_BASE_URL is not set"):
        LlmAgent()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (ENV_MAX_TURNS, "zero", "MCP_HAZARD_LLM_MAX_TURNS must be a whole number >= 1, got 'zero'"),
        (ENV_MAX_TURNS, "0", "MCP_HAZARD_LLM_MAX_TURNS must be a whole number >= 1, got '0'"),
        (ENV_TEMPERATURE, "-1", "MCP_HAZARD_LLM_TEMPERATURE must be a number >= 0, got '-1'"),
        (ENV_TIMEOUT_S, "0", "MCP_HAZARD_LLM_TIMEOUT_S must be a number > 0, got '0'"),
        (ENV_BASE_URL, "127.0.0.1:11434/v1", "MCP_HAZARD_LLM_BASE_URL must start with http:// or https://"),
    ],
)
def test_bad_setting_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:11434/v1")
    monkeypatch.setenv(ENV_MODEL, "qwen2.5:7b")
    monkeypatch.setenv(variable, value)
    with pytest.raises(UserError) as caught:
        LlmAgent()
    assert str(caught.value).startswith(expected)


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:11434/v1/chat/completions/")
    monkeypatch.setenv(ENV_MODEL, "qwen2.5:7b")
    monkeypatch.setenv(ENV_API_KEY, "sk-env")
    config = LlmAgent().config
    assert config.url == "http://127.0.0.1:11434/v1/chat/completions"
    assert (config.model, config.api_key, config.max_turns, config.temperature, config.timeout_s) == (
        "qwen2.5:7b", "sk-env", 20, 0.0, 60.0,
    )  # fmt: skip
    assert "sk-env" not in repr(config)
    assert LlmAgent(max_turns=5, timeout_s=2.5).config.max_turns == 5

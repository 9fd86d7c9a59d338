"""The LLM agent against the STRICT fake OpenAI-compatible endpoint over real HTTP, driving the real mcp-hazard
server (in memory) on the travel scenario: what the model is sent (every request must pass the fake's checks, which
are those of llama.cpp, vLLM and OpenAI), what reaches the trace and the report, and every failure a user can meet.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.agents.llm import ALL_ENV, ENV_BASE_URL, ENV_MAX_TURNS, ENV_MODEL, ENV_TEMPERATURE, LAST_TURN
from mcp_hazard.agents.llm_messages import alias_of
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.server.served_episode import SUBMIT_TOOL

from .fake_llm import call, reply, tool_calls
from .llm_support import MODEL, TRAVEL, run_agent, task_prompt, tool_messages

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own MCP_HAZARD_LLM_* settings must not leak into the tests."""
    for name in ALL_ENV:
        monkeypatch.delenv(name, raising=False)


# -- 1. the happy path, and what a strict server needs ----------------------------------------------------------------


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
    assert run.report.events == []
    assert run.report.notes == ["usage: 2 model turns, 20 prompt + 10 completion tokens"]
    assert [(e["arguments"], e["outcome"]) for e in run.calls("get_fare")] == [({"flight_id": "AU-426"}, "ok")]
    assert run.answers() == ["Standard"]
    assert len(run.trace.of_type("tools_listed")) == 2  # re-listed before every model turn

    first, second = run.fake.requests
    assert set(first) == {"model", "messages", "tools", "tool_choice", "temperature", "max_tokens"}  # no seed unset
    assert (first["model"], first["temperature"], first["tool_choice"], first["max_tokens"]) == (
        MODEL, 0.5, "auto", 1024,
    )  # fmt: skip
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == task_prompt(travel)
    tools = {t["function"]["name"]: t for t in first["tools"]}
    assert {"get_fare", "fare_archive_lookup", SUBMIT_TOOL} <= set(tools)
    assert tools["get_fare"]["function"]["description"].startswith("Current fare")
    parameters = tools["get_fare"]["function"]["parameters"]
    assert parameters["required"] == ["flight_id"]
    assert run.fake.headers[0]["authorization"] == "Bearer sk-test"

    # The regression of the issue: the model's null content is echoed as "", never null.
    assistant = second["messages"][2]
    assert assistant == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "get_fare", "arguments": '{"flight_id": "AU-426"}'}}],
    }  # fmt: skip
    result = tool_messages(second)["c1"]
    assert "Standard" in result and "167" in result
    assert not result.startswith("Tool error")


async def test_missing_and_repeated_call_ids_get_stable_ones(travel: LoadedScenario, tmp_path: Path) -> None:
    script = [
        tool_calls(call("get_fare", {"flight_id": "AU-426"}), call("get_fare", {"flight_id": "AU-412"}, "same")),
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "same"), content="Checking again."),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"})),
    ]
    run = await run_agent(travel, tmp_path, script, seed=7, max_tokens=300)

    last = run.fake.requests[2]
    echoed = [[c["id"] for c in m["tool_calls"]] for m in last["messages"] if m.get("tool_calls")]
    assert echoed == [["call_1_0", "same"], ["call_2_0"]]  # none given -> call_TURN_INDEX; a reused id is replaced
    assert list(tool_messages(last)) == ["call_1_0", "same", "call_2_0"]  # one reply per call, in order
    assert (last["seed"], last["max_tokens"]) == (7, 300)
    assert "turn 2: model said: Checking again." in run.report.notes
    assert run.report.answer == "Standard"


async def test_invalid_tool_names_get_a_stable_alias(tmp_path: Path) -> None:
    # Scenario tool names may hold dots (a renaming intervention can serve one); OpenAI's rule forbids them.
    text = re.sub(r"\bget_fare\b", "fares.get", TRAVEL.read_text(encoding="utf-8"))
    (tmp_path / "dotted.yaml").write_text(text, encoding="utf-8")
    dotted = load_scenario(tmp_path / "dotted.yaml")
    alias = alias_of("fares.get")
    assert re.fullmatch(r"fares_get_[0-9a-f]{8}", alias)
    assert alias == alias_of("fares.get")  # stable across calls and processes (blake2b)
    script = [
        tool_calls(call(alias, {"flight_id": "AU-426"}, "c1")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c2")),
    ]
    run = await run_agent(dotted, tmp_path / "run", script)

    names = [t["function"]["name"] for t in run.fake.requests[0]["tools"]]
    assert alias in names and "fares.get" not in names
    assert [e["outcome"] for e in run.calls("fares.get")] == ["ok"]  # mapped back to the served name
    assert "Standard" in tool_messages(run.fake.requests[1])["c1"]


# -- 2. tool-side trouble the model sees ----------------------------------------------------------------------------


async def test_transient_error_is_shown_to_the_model(travel: LoadedScenario, tmp_path: Path) -> None:
    script = [
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c1")),
        tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c2")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c3")),
    ]
    run = await run_agent(travel, tmp_path, script, "transient_error:times=1,tools=get_fare")

    calls = run.calls("get_fare")
    assert [c["outcome"] for c in calls] == ["rejected", "ok"]
    failed = tool_messages(run.fake.requests[1])["c1"]
    assert failed.startswith("Tool error: ")
    assert calls[0]["error"] in failed
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
    assert get_fare_fields(run.fake.requests[1]) == ["flight_identifier"]
    assert [c["outcome"] for c in run.calls("get_fare")] == ["rejected", "ok"]
    assert run.report.answer == "Standard"


async def test_unknown_tool_goes_to_the_server(travel: LoadedScenario, tmp_path: Path) -> None:
    script = [
        tool_calls(call("get_fare_v2", {"flight_id": "AU-426"}, "c1")),
        tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c2")),
    ]
    run = await run_agent(travel, tmp_path, script)

    assert [e["outcome"] for e in run.calls("get_fare_v2")] == ["unknown_tool"]
    assert tool_messages(run.fake.requests[1])["c1"].startswith("Tool error: ")
    assert run.events() == []


# -- 3. model-side trouble ------------------------------------------------------------------------------------------


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
    # Echoed with {} arguments: vLLM and llama.cpp parse echoed arguments and would refuse the whole request.
    echoed = run.fake.requests[1]["messages"][2]["tool_calls"]
    assert [c["function"]["arguments"] for c in echoed] == ["{}", "{}"]
    assert len(run.calls("get_fare")) == 1  # malformed calls never reach the server
    malformed = run.events("malformed_call")
    assert [(e["turn"], e["tool"], e["after_calls"]) for e in malformed] == [(1, "get_fare", 0), (1, "get_fare", 0)]
    assert "not valid JSON" in malformed[0]["detail"]
    assert run.report.answer == "Standard"
    assert run.report.calls == 2


async def test_text_reply_gets_one_reminder_then_is_submitted(travel: LoadedScenario, tmp_path: Path) -> None:
    refusal = "I cannot determine the fare class without more information."
    run = await run_agent(travel, tmp_path, [reply(refusal, reasoning="The user wants a fare."), reply(refusal)])

    assert run.report.answer == refusal
    assert run.answers() == [refusal]  # the scorer judges it
    assert [e["kind"] for e in run.events()] == ["text_reply", "text_reply"]
    reminder = run.fake.requests[1]["messages"][-1]
    assert reminder["role"] == "user" and SUBMIT_TOOL in reminder["content"]
    assert "turn 1: model reasoning: The user wants a fare." in run.report.notes
    assert f"turn 1: model said: {refusal}" in run.report.notes


async def test_text_then_tool_call_is_only_reminded(travel: LoadedScenario, tmp_path: Path) -> None:
    # An empty brief prompt makes the agent read the task from the server's `task` prompt.
    script = [reply("Let me think."), tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c1"))]
    run = await run_agent(travel, tmp_path, script, prompt="")

    assert run.answers() == ["Standard"]
    assert [e["kind"] for e in run.events()] == ["text_reply"]
    assert len(run.trace.of_type("task_read")) == 1
    assert task_prompt(travel).strip() in run.fake.requests[0]["messages"][1]["content"]


async def test_empty_replies(travel: LoadedScenario, tmp_path: Path) -> None:
    run = await run_agent(travel, tmp_path, [reply(""), tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}))])
    assert run.report.answer == "Standard"
    assert [e["kind"] for e in run.events()] == ["empty_reply"]
    assert run.fake.requests[1]["messages"][-1]["role"] == "user"

    stopped = await run_agent(travel, tmp_path / "two", [reply(""), reply("  ")])
    assert stopped.report.answer is None
    assert stopped.answers() == []
    assert [e["kind"] for e in stopped.events()] == ["empty_reply", "empty_reply"]
    assert len(stopped.fake.requests) == 2


async def test_truncated_replies(travel: LoadedScenario, tmp_path: Path) -> None:
    rambling = " ".join(["word"] * 50)
    cut_call = call("get_fare", '{"flight_id": "AU-426", "note": "a b c d e f g h"}', "cut")
    script = [reply(rambling), tool_calls(cut_call), tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "ok"))]
    run = await run_agent(travel, tmp_path, script, max_tokens=5)

    assert [(e["kind"], e["turn"]) for e in run.events()] == [
        ("truncated", 1), ("text_reply", 1), ("truncated", 2), ("malformed_call", 2),
    ]  # fmt: skip
    assert run.fake.requests[1]["messages"][2]["content"] == "word word word word word"
    assert run.calls("get_fare") == []
    assert run.answers() == ["Standard"]


async def test_max_turns_without_an_answer(
    travel: LoadedScenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_MAX_TURNS, "3")
    script = [tool_calls(call("get_fare", {"flight_id": "AU-426"}, f"c{n}")) for n in range(1, 4)]
    run = await run_agent(travel, tmp_path, script)

    assert run.report.answer is None
    assert "no answer after 3 model turns (MCP_HAZARD_LLM_MAX_TURNS)" in run.report.notes
    assert [(e["kind"], e["turn"], e["after_calls"]) for e in run.events()] == [
        ("last_turn", 3, 2),
        ("turn_limit", 3, 3),
    ]
    assert len(run.fake.requests) == 3
    last = run.fake.requests[-1]
    assert [t["function"]["name"] for t in last["tools"]] == ["submit_answer"]  # the last turn offers the answer
    assert last["messages"][-1] == {"role": "user", "content": LAST_TURN}
    assert [t["function"]["name"] for t in run.fake.requests[0]["tools"]] != ["submit_answer"]
    assert run.answers() == []


async def test_a_text_reply_on_the_last_turn_is_the_answer(
    travel: LoadedScenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_MAX_TURNS, "2")
    script = [tool_calls(call("get_fare", {"flight_id": "AU-426"}, "c1")), reply("The fare class is Standard.")]
    run = await run_agent(travel, tmp_path, script)

    assert run.answers() == ["The fare class is Standard."]
    assert run.report.answer == "The fare class is Standard."
    assert [e["kind"] for e in run.events()] == ["last_turn", "text_reply"]

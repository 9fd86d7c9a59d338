"""The strict fake endpoint refuses what real servers refuse: if it did not, the agent's tests would prove nothing.
Each case is one request a past version of the agent sent (or could send), with the status a real server answers.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest
from conftest import WAIT_S

from .fake_llm import FakeLlm, call, flaky, http_reply, reply, tool_calls

TOOL = {"type": "function", "function": {"name": "get_fare", "description": "", "parameters": {"type": "object"}}}
GOOD: dict[str, Any] = {
    "model": "m", "max_tokens": 50, "tools": [TOOL], "tool_choice": "auto",
    "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task A"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_fare", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ],
}  # fmt: skip


IDS = [
    "null", "no-content", "parts", "no-id", "bad-args", "bad-name", "wrong-id", "missing-reply", "unknown-key",
    "no-max-tokens", "empty-tools", "bad-tool-name", "stream",
]  # fmt: skip


def changed(path: list[Any], value: Any) -> dict[str, Any]:
    body = copy.deepcopy(GOOD)
    target = body
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


@pytest.fixture(scope="module")
def fake() -> Any:
    script = [reply("one"), reply("two"), reply("three")]
    other = [flaky(reply("b"), http_reply(429, "wait", retry_after="1"))]
    with FakeLlm(script, scripts={"task B": other}).in_thread() as f:
        yield f


def post(fake: FakeLlm, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{fake.base_url}/chat/completions", json=body, timeout=WAIT_S)


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (changed(["messages", 2, "content"], None), 500, "content is null"),
        (changed(["messages", 2, "content"], KeyError), 500, "content is null or missing"),
        (changed(["messages", 1, "content"], [{"type": "text", "text": "x"}]), 400, "must be a string"),
        (changed(["messages", 2, "tool_calls", 0, "id"], None), 400, "no id"),
        (changed(["messages", 2, "tool_calls", 0, "function", "arguments"], "{bad"), 500, "not JSON"),
        (changed(["messages", 2, "tool_calls", 0, "function", "name"], "fares.get"), 400, "bad function name"),
        (changed(["messages", 3, "tool_call_id"], "c9"), 400, "answers no pending call"),
        (changed(["messages", 3], {"role": "user", "content": "x"}), 400, "have no tool message"),
        (changed(["stream_options"], {}), 400, "unknown top-level keys"),
        (changed(["max_tokens"], KeyError), 400, "missing ['max_tokens']"),
        (changed(["tools"], []), 400, "tools must be a non-empty list"),
        (changed(["tools", 0, "function", "name"], "a.b"), 400, "invalid function name"),
        (changed(["stream"], True), 400, "stream must be false"),
    ],
    ids=IDS,
)
def test_strict_refusals(fake: FakeLlm, body: dict[str, Any], status: int, words: str) -> None:
    before = len(fake.problems)
    response = post(fake, body)
    assert response.status_code == status, response.text
    assert words in response.text
    assert len(fake.problems) == before + 1
    fake.problems.clear()


def test_a_good_request_plays_the_turn_of_its_conversation(fake: FakeLlm) -> None:
    response = post(fake, GOOD)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "two"  # one assistant message so far -> turn 2
    assert post(fake, GOOD | {"stream": False}).status_code == 200  # every server's default, sent by pydantic-ai

    other = changed(["messages"], [{"role": "user", "content": "task B"}])
    first, second = post(fake, other), post(fake, other)
    assert (first.status_code, first.headers["retry-after"]) == (429, "1")
    assert second.json()["choices"][0]["message"]["content"] == "b"
    assert fake.problems == []


def test_max_tokens_cuts_the_reply() -> None:
    long_call = call("get_fare", json.dumps({"flight_id": "AU-426", "x": "a b c"}), "c1")
    with FakeLlm([reply("a b c d e"), tool_calls(long_call)]).in_thread() as fake:
        body = changed(["messages"], [{"role": "user", "content": "t"}]) | {"max_tokens": 3}
        choice = post(fake, body).json()["choices"][0]
        assert (choice["message"]["content"], choice["finish_reason"]) == ("a b c", "length")
        body["messages"] += [{"role": "assistant", "content": "a b c"}, {"role": "user", "content": "go on"}]
        choice = post(fake, body).json()["choices"][0]
        assert choice["finish_reason"] == "length"
        assert choice["message"]["tool_calls"][0]["function"]["arguments"] == '{"flight_id": "AU-426", "x":'

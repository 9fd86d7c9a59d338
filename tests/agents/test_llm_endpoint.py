"""The LLM agent's model endpoint in an episode: retries with their waits (recorded, not slept), Retry-After, and
the one-line `LlmEndpointError` for a refusal or an endpoint that stays down."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import anyio
import pytest

from mcp_hazard.agents.drive import Brief
from mcp_hazard.agents.llm import ALL_ENV, LlmAgent, LlmEndpointError
from mcp_hazard.agents.llm_endpoint import MAX_BODY_BYTES
from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.runner.transports import free_port, open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.server.served_episode import SUBMIT_TOOL

from .fake_llm import FakeLlm, Turn, call, flaky, http_reply, slow, tool_calls
from .llm_support import DEADLINE_S, MODEL, TASK, run_agent, task_prompt

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own MCP_HAZARD_LLM_* settings must not leak into the tests."""
    for name in ALL_ENV:
        monkeypatch.delenv(name, raising=False)


# -- retries and failures ------------------------------------------------------------------------------------------

SUBMIT = tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}, "c1"))


async def test_retries_back_off_and_succeed(travel: LoadedScenario, tmp_path: Path) -> None:
    turn = flaky(SUBMIT, http_reply(500, "boom"), http_reply(503, "loading model"), http_reply(502, "bad gateway"))
    run = await run_agent(travel, tmp_path, [turn])

    assert run.waits == [1, 2, 4]
    assert run.report.answer == "Standard"
    retries = [n for n in run.report.notes if "retry" in n]
    assert retries[0] == "turn 1: model endpoint HTTP 500: boom; retry 1/4 in 1s"
    assert len(retries) == 3


async def test_retry_after_is_honoured_and_capped(travel: LoadedScenario, tmp_path: Path) -> None:
    turn = flaky(SUBMIT, http_reply(429, "slow down", retry_after="3"), http_reply(429, "later", retry_after="600"))
    run = await run_agent(travel, tmp_path, [turn], backoff_s=0.5)
    assert run.waits == [3, 30]
    assert run.report.answer == "Standard"


async def test_backoff_is_capped_and_gives_up(travel: LoadedScenario, tmp_path: Path) -> None:
    fake = FakeLlm([http_reply(500, "internal error\nTraceback: boom " + "x" * 2000)])
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with pytest.raises(LlmEndpointError) as caught:
        await run_agent(travel, tmp_path, [], fake=fake, retries=6, api_key="sk-secret", sleep=sleep)
    assert waits == [1, 2, 4, 8, 8, 8]
    assert len(fake.requests) == 7
    message = str(caught.value)
    assert "HTTP 500: internal error Traceback: boom" in message
    assert "(after 6 retries, MCP_HAZARD_LLM_RETRIES)" in message
    assert "\n" not in message and len(message) < 400 and "sk-secret" not in message


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        (http_reply(400, '{"error": "bad request"}'), 'HTTP 400: {"error": "bad request"}'),
        (http_reply(404, "model 'fake-model' not found"), "HTTP 404: model 'fake-model' not found"),
        (http_reply(422, ""), "HTTP 422: (empty body)"),
        (http_reply(200, "<html>not json</html>"), "HTTP 200 but the body is not JSON: <html>"),
        (http_reply(200, '{"object": "error"}'), "not a chat completion"),
        (http_reply(200, '{"choices": ' + "[" * 100_000 + "]" * 100_000 + "}"), "HTTP 200 but the body is not JSON"),
    ],
    ids=["400", "404", "422", "not-json", "not-a-completion", "nested-too-deeply"],  # deep: was a RecursionError
)
async def test_refusals_fail_at_once(travel: LoadedScenario, tmp_path: Path, turn: Turn, expected: str) -> None:
    fake = FakeLlm([turn])
    with pytest.raises(LlmEndpointError) as caught:
        await run_agent(travel, tmp_path, [], fake=fake)
    assert len(fake.requests) == 1  # never retried
    message = str(caught.value)
    assert isinstance(caught.value, UserError)
    assert expected in message and "/v1/chat/completions" in message and "\n" not in message


async def test_a_lone_surrogate_from_the_model_is_u_fffd_in_the_answer_and_the_trace(
    travel: LoadedScenario, tmp_path: Path
) -> None:
    """`\\ud800` is JSON a model server may send (a token cut mid-character): no UTF-8 text can hold it, so the
    episode's trace could not be written and the whole run ended in a traceback. json_parse.py replaces it, in the
    reply's text (taken as the answer here) as in a call's arguments (JSON text inside the JSON)."""
    arguments = json.dumps(json.dumps({"answer": "Standard \ud800"}))  # the escape, escaped again
    reply = '{"choices": [{"message": {"role": "assistant", "content": "It is Standard \\udfff"}}]}'
    submit = ('{"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": '
              f'"function", "function": {{"name": "{SUBMIT_TOOL}", "arguments": {arguments}}}}}]}}}}]}}')  # fmt: skip
    for turns, answer in (([reply, reply], "It is Standard \ufffd"), ([submit], "Standard \ufffd")):
        assert "\\ud" in turns[0]  # two replies of text in a row: the second is submitted as the answer
        run = await run_agent(travel, tmp_path / answer[:2], [http_reply(200, body) for body in turns])
        assert run.report.answer == answer
        assert run.trace.warnings == []
        assert [e["answer"] for e in run.trace.events if e["type"] == "answer_submitted"] == [answer]


async def test_a_nan_in_a_field_the_agent_does_not_read_costs_nothing(travel: LoadedScenario, tmp_path: Path) -> None:
    """NaN is not JSON, and the readers of files refuse it; a model server's reply is read as Python reads it, so
    a NaN in its usage figures does not turn a good answer into an endpoint error."""
    arguments = json.dumps(json.dumps({"answer": "Standard"}))
    body = ('{"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": '
            f'"function", "function": {{"name": "{SUBMIT_TOOL}", "arguments": {arguments}}}}}]}}}}], '
            '"usage": {"prompt_tokens": NaN, "completion_tokens": Infinity}}')  # fmt: skip
    run = await run_agent(travel, tmp_path, [http_reply(200, body)])
    assert run.report.answer == "Standard"


async def test_a_body_without_end_is_refused_at_the_bound(travel: LoadedScenario, tmp_path: Path) -> None:
    """100 MiB of reply from 100 KB sent (gzip): the runner holds every episode's agent, so a reply is read only up
    to MAX_BODY_BYTES once decompressed, and refused there in one line, never asked again. A compressed completion
    of the usual size is read as any other."""
    bomb = Turn(raw=gzip.compress(b" " * (100 * 1024 * 1024), 1), headers={"Content-Encoding": "gzip"})
    fake = FakeLlm([bomb])
    with pytest.raises(LlmEndpointError) as caught:
        await run_agent(travel, tmp_path / "bomb", [], fake=fake)
    assert str(caught.value).endswith(f"/v1/chat/completions: HTTP 200 with a body of more than {MAX_BODY_BYTES:,} "
                                      "bytes, more than a chat completion holds; not read further")  # fmt: skip
    assert len(fake.requests) == 1
    arguments = json.dumps(json.dumps({"answer": "Standard"}))
    body = ('{"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": '
            f'"function", "function": {{"name": "{SUBMIT_TOOL}", "arguments": {arguments}}}}}]}}}}]}}')  # fmt: skip
    packed = Turn(raw=gzip.compress(body.encode()), headers={"Content-Encoding": "gzip"})
    run = await run_agent(travel, tmp_path / "packed", [packed])
    assert run.report.answer == "Standard"


async def test_a_slow_answer_is_not_asked_again(travel: LoadedScenario, tmp_path: Path) -> None:
    """A server that took the request but answers too late is still working on it (llama.cpp serves one request at
    a time): sending it again would queue a second copy behind the first. One line, no retry."""
    fake = FakeLlm([slow(SUBMIT, 3.0)])
    with pytest.raises(LlmEndpointError, match=r"no response within 0.5s \(MCP_HAZARD_LLM_TIMEOUT_S\)$"):
        await run_agent(travel, tmp_path, [], fake=fake, timeout_s=0.5)
    assert len(fake.requests) == 1


async def test_unreachable_endpoint_is_retried_then_one_line(travel: LoadedScenario, tmp_path: Path) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    agent = LlmAgent(base_url=f"http://127.0.0.1:{free_port()}/v1", model=MODEL, retries=2, sleep=sleep)
    brief = Brief(prompt=task_prompt(travel))
    with anyio.fail_after(DEADLINE_S):
        async with open_episode("memory", travel, TASK, Condition(), tmp_path) as connected:
            with pytest.raises(LlmEndpointError, match=r"cannot connect.*\(after 2 retries") as caught:
                await agent.run(connected.client, brief)
    assert "\n" not in str(caught.value)
    assert waits == [1, 2]
    assert brief.report.notes[-1] == "usage: 1 model turns, 0 prompt + 0 completion tokens"  # kept on failure

"""`mcp-hazard run --agent llm` as a user runs it: the CLI (through `main()` in the test's process: the process
boundary is not what these test), over real MCP transports (http, stdio), against the strict fake endpoint served from
a thread of the test process, then `mcp-hazard score` on its traces.

Each run is one episode (travel/fare-class; `--hazard pagination` fits no tool of that task, so only the clean
condition runs). The fake picks its script by the task prompt and its turn by the conversation, as a real server
sees it: it holds no per-run state.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.agents.llm import ALL_ENV, ENV_BASE_URL, ENV_MODEL, ENV_RETRIES
from mcp_hazard.runner.transports import free_port
from mcp_hazard.server.served_episode import SUBMIT_TOOL
from tests.runner.support import TRAVEL, Ran, assert_trace_ended, jsonl, main_cli, no_traceback

from .fake_llm import FakeLlm, Turn, call, flaky, http_reply, reply, tool_calls

pytestmark = pytest.mark.e2e

PROMPT_KEY = "AU-426 sold in"  # in fare-class's prompt, and in no other task's
EPISODE = "llm.travel.fare-class.clean.strict.s0"
FARE = call("get_fare", {"flight_id": "AU-426"})  # no id: the agent makes one
SUBMIT = tool_calls(call(SUBMIT_TOOL, {"answer": "Standard"}))


@dataclass
class LlmRun:
    ran: Ran
    out: Path
    fake: FakeLlm

    @property
    def trace(self) -> Path:
        return self.out / "traces" / f"{EPISODE}.jsonl"

    def log(self) -> dict[str, Any]:
        (record,) = jsonl(self.out / "run.jsonl")
        return record

    def scored(self) -> dict[str, Any]:
        """This episode's row of the scorecard the run wrote (report.json)."""
        (row,) = json.loads((self.out / "report.json").read_text(encoding="utf-8"))["per_episode"]
        return dict(row)

    def scored_by_cli(self) -> dict[str, Any]:
        """`mcp-hazard score` on the run's traces, as a user would check them (in this process): this episode's row."""
        ran = main_cli("score", str(self.out / "traces"), "--format", "json")
        assert ran.code == 0, ran.explain()
        (row,) = json.loads(ran.stdout)["per_episode"]
        return dict(row)


def llm_cli(*args: str, base_url: str, **extra: str) -> Ran:
    """`mcp-hazard ARGS` (main_cli) pointed at the endpoint `base_url` with the model "fake-model"; the developer's
    own MCP_HAZARD_LLM_* settings are set aside for the command's duration (they must not leak in)."""
    saved = {name: os.environ.pop(name) for name in ALL_ENV if name in os.environ}
    try:
        return main_cli(*args, **{ENV_BASE_URL: base_url, ENV_MODEL: "fake-model", **extra})
    finally:
        os.environ.update(saved)


def run_llm(tmp_path: Path, script: list[Turn], transport: str, **extra: str) -> LlmRun:
    out = tmp_path / "out"
    with FakeLlm(scripts={PROMPT_KEY: script}).in_thread() as fake:
        ran = llm_cli(
            "run", str(TRAVEL), "--task", "fare-class", "--hazard", "declared", "--agent", "llm",  # none: clean only
            "--transport", transport, "--out", str(out), "--no-progress", "--timeout", "30",
            base_url=fake.base_url, **extra,
        )  # fmt: skip
    assert fake.problems == [], f"the agent sent a request a strict server refuses\n{ran.explain()}"
    assert no_traceback(ran.stderr), ran.explain()
    return LlmRun(ran, out, fake)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_scripted_correct_path_is_scored_correct(tmp_path: Path, transport: str) -> None:
    run = run_llm(tmp_path, [tool_calls(FARE), SUBMIT], transport)

    assert run.ran.code == 0, run.ran.explain()
    assert "1 episodes: 1 run" in run.ran.stdout
    assert run.log()["status"] == "done"
    events = assert_trace_ended(run.trace, "finished")
    assert [e["tool"] for e in events if e["type"] == "tool_called"] == ["get_fare"]
    assert [e["answer"] for e in events if e["type"] == "answer_submitted"] == ["Standard"]
    row = run.scored_by_cli()
    assert (row["correct"], row["answer"], row["agent_outcome"]) == (True, "Standard", "finished")
    second = run.fake.requests[1]["messages"]
    assert second[2]["content"] == "" and second[2]["tool_calls"][0]["id"] == "call_1_0"
    assert second[3] == {"role": "tool", "tool_call_id": "call_1_0", "content": second[3]["content"]}


def test_a_500_is_retried_and_noted(tmp_path: Path) -> None:
    run = run_llm(tmp_path, [flaky(tool_calls(FARE), http_reply(500, "model is loading")), SUBMIT], "http")

    assert run.ran.code == 0, run.ran.explain()
    record = run.log()
    assert record["status"] == "done"
    assert "turn 1: model endpoint HTTP 500: model is loading; retry 1/4 in 1s" in record["notes"]
    assert "llm endpoint retry" in run.ran.stderr  # the log line
    assert run.scored()["correct"] is True


def test_a_permanent_500_is_an_endpoint_error(tmp_path: Path) -> None:
    run = run_llm(tmp_path, [http_reply(500, "CUDA out of memory")], "http", **{ENV_RETRIES: "1"})

    assert run.ran.code == 1, run.ran.explain()
    record = run.log()
    assert record["status"] == "endpoint_error"
    assert "HTTP 500: CUDA out of memory (after 1 retry, MCP_HAZARD_LLM_RETRIES)" in record["note"]
    ended = assert_trace_ended(run.trace, "endpoint_error")[-1]
    assert "CUDA out of memory" in ended["detail"]
    assert f"mcp-hazard: endpoint_error: {EPISODE}: LlmEndpointError: LLM endpoint" in run.ran.stderr
    assert run.scored()["agent_outcome"] == "endpoint_error"


def test_a_model_servers_words_reach_the_terminal_with_control_characters_escaped(tmp_path: Path) -> None:
    """A refusal's body is quoted in the episode's line on stderr: an escape sequence in it (a server that retitles
    the window, rewrites lines) is shown as `\\x1b`, and a newline does not split the line."""
    run = run_llm(tmp_path, [http_reply(400, "\x1b]0;owned\x07bad\nrequest\x1b[2K")], "http")
    assert run.ran.code == 1, run.ran.explain()
    assert run.log()["status"] == "endpoint_error"
    assert "\x1b" not in run.ran.stderr and "\x07" not in run.ran.stderr
    (line,) = [line for line in run.ran.stderr.splitlines() if line.startswith("mcp-hazard: endpoint_error:")]
    assert line.endswith("HTTP 400: \\x1b]0;owned\\x07bad request\\x1b[2K"), line


def test_invalid_json_arguments_are_a_malformed_call(tmp_path: Path) -> None:
    script = [tool_calls(call("get_fare", '{"flight_id": AU-426}')), tool_calls(FARE), SUBMIT]
    run = run_llm(tmp_path, script, "stdio")

    assert run.ran.code == 0, run.ran.explain()
    ended = assert_trace_ended(run.trace, "finished")[-1]
    assert [(e["kind"], e["tool"], e["turn"]) for e in ended["events"]] == [("malformed_call", "get_fare", 1)]
    assert "not valid JSON" in ended["events"][0]["detail"]
    row = run.scored()
    assert row["correct"] is True


def test_a_refusal_twice_is_submitted_and_judged(tmp_path: Path) -> None:
    refusal = "I'm sorry, I cannot look up flight information."
    run = run_llm(tmp_path, [reply(refusal), reply(refusal)], "http")

    assert run.ran.code == 0, run.ran.explain()
    assert run.log()["status"] == "done"
    ended = assert_trace_ended(run.trace, "finished")[-1]
    assert [e["kind"] for e in ended["events"]] == ["text_reply", "text_reply"]
    row = run.scored()
    assert (row["answered"], row["answer"], row["correct"], row["agent_outcome"]) == (True, refusal, False, "finished")
    assert row["episode_failure"] != "agent_crashed"


def test_an_unreachable_endpoint_stops_the_run_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = llm_cli(
        "run", str(TRAVEL), "--task", "fare-class", "--agent", "llm", "--out", str(out), "--no-progress",
        base_url=f"http://127.0.0.1:{free_port()}/v1",
    )  # fmt: skip
    assert ran.code == 2, ran.explain()
    assert ran.stdout == ""
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.explain()
    assert lines[0].startswith("mcp-hazard: error: LLM endpoint http://127.0.0.1:")
    assert "/v1/models: cannot connect" in lines[0]
    assert no_traceback(ran.stderr)
    assert not (out / "traces").exists()  # nothing ran

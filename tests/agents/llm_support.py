"""Shared by the LLM agent's in-memory tests: one episode of the real server (travel, fare-class) driven by the
agent against the strict fake endpoint, with retry waits recorded instead of slept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from conftest import WAIT_S

from mcp_hazard.agents.drive import AgentReport, Brief
from mcp_hazard.agents.llm import LlmAgent, LlmEndpointError
from mcp_hazard.condition import Condition
from mcp_hazard.hazards import parse_hazard_option
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.trace.reader import Trace, read_trace

from .fake_llm import FakeLlm, Turn

TRAVEL = Path(__file__).resolve().parents[2] / "scenarios" / "travel.yaml"
TASK = "fare-class"  # "Which fare class is flight AU-426 sold in?" -> Standard (get_fare)
MODEL = "fake-model"
DEADLINE_S = WAIT_S  # a hang guard, not a speed assertion


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
    waits: list[float]

    def calls(self, tool: str) -> list[dict[str, Any]]:
        return [e for e in self.trace.of_type("tool_called") if e["tool"] == tool]

    def answers(self) -> list[str]:
        return [e["answer"] for e in self.trace.of_type("answer_submitted")]

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.report.events if kind is None or e["kind"] == kind]


def task_prompt(travel: LoadedScenario) -> str:
    task = travel.model.task(TASK)
    assert task is not None
    return task.prompt


async def run_agent(
    scenario: LoadedScenario,
    tmp_path: Path,
    script: list[Turn],
    *hazards: str,
    prompt: str | None = None,
    call_timeout_s: float = 5.0,
    fake: FakeLlm | None = None,
    **agent_options: Any,
) -> Run:
    """One episode: the fake endpoint plays `script`, the agent drives the real server in memory; retry waits are
    recorded, not slept. The brief's report is the one checked, as the runner reads it.

    An `LlmEndpointError` is caught inside the client's block and raised after it: raised through the block, the
    SDK client's task group would wrap it in an ExceptionGroup.
    """
    fake = fake or FakeLlm(script)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    failure: LlmEndpointError | None = None
    brief = Brief(prompt=task_prompt(scenario) if prompt is None else prompt, call_timeout_s=call_timeout_s)
    with anyio.fail_after(DEADLINE_S):
        async with fake.running():
            agent = LlmAgent(**{"base_url": fake.base_url, "model": MODEL, "sleep": sleep, **agent_options})
            async with open_episode("memory", scenario, TASK, condition(*hazards), tmp_path, agent="llm") as ep:
                try:
                    returned = await agent.run(ep.client, brief)
                    assert returned is brief.report
                except LlmEndpointError as exc:
                    failure = exc
    assert fake.problems == [], f"the agent sent a request a strict server refuses: {fake.problems}"
    if failure is not None:
        raise failure
    return Run(brief.report, fake, read_trace(ep.trace_path), waits)


def tool_messages(request: dict[str, Any]) -> dict[str, str]:
    """tool_call_id -> content of every tool message in one request."""
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}

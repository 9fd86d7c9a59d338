"""Run every task of some scenarios with the golden-path agent over a real transport, and summarise the traces.

This is the end-to-end smoke test a new user runs first: it proves the scenarios, the server, the transport and the
trace work together, and shows what a trace records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.condition import Condition
from mcp_hazard.runner.transports import HttpHost, Transport, open_episode
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.load import LoadedScenario
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.trace.reader import read_trace


@dataclass
class EpisodeSummary:
    scenario: str
    task: str
    workflow: str
    steps: int
    calls: int
    errors: int
    answer: str | None
    correct: bool
    trace: str
    events: int
    problem: str | None = None


async def run_golden(
    scenarios: list[LoadedScenario], trace_dir: Path, *, transport: Transport = "stdio", seed: int = 0
) -> list[EpisodeSummary]:
    summaries: list[EpisodeSummary] = []
    condition = Condition(seed=seed)
    host = HttpHost(EpisodeRegistry(scenarios, trace_dir, transport="http")) if transport == "http" else None

    async def one(scenario: LoadedScenario, task_id: str) -> None:
        task = scenario.model.task(task_id)
        assert task is not None
        async with open_episode(
            transport, scenario, task.id, condition, trace_dir, http_host=host, agent="golden"
        ) as connected:
            report = await run_golden_agent(connected.client, task)
        trace = read_trace(connected.trace_path)
        calls = trace.of_type("tool_called")
        summaries.append(
            EpisodeSummary(
                scenario=scenario.id,
                task=task.id,
                workflow=task.workflow,
                steps=len(task.golden_path.steps),
                calls=len(calls) + len(trace.of_type("answer_submitted")),
                errors=sum(1 for call in calls if call["outcome"] != "ok"),
                answer=report.answer,
                correct=answer_matches(task.answer, report.answer),
                trace=str(connected.trace_path),
                events=len(trace.events),
                problem="; ".join(report.errors) or None,
            )
        )

    async def all_tasks() -> None:
        for scenario in scenarios:
            for task in scenario.model.tasks:
                await one(scenario, task.id)

    if host is not None:
        async with host.running():
            await all_tasks()
    else:
        await all_tasks()
    return summaries

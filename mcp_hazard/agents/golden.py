"""The golden-path agent: follows a task's golden path over MCP, feeding real results into later arguments.

It knows the golden path (it is a reference agent, not an agent under test) but takes every value from what the
server actually returned, so it exercises the real transport and the real behaviours end to end.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp import Client

from mcp_hazard.agents.drive import AgentReport, Brief, result_value
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.scenario.models import GoldenPath, Task
from mcp_hazard.server.served_episode import SUBMIT_TOOL, TASK_PROMPT_NAME

Heard = Callable[[types.CallToolResult], Awaitable[None]]


async def follow_plan(client: Client, plan: GoldenPath, report: AgentReport, heard: Heard | None = None) -> Any:
    """Call the plan's steps in order, each on what the earlier ones returned (`heard` sees every result); the answer
    it renders, or None when a step broke (why is in the report's notes)."""
    results: dict[str, Any] = {}
    for step in plan.steps:
        try:
            arguments = render(step.arguments, results)
        except ExpressionError as exc:
            report.notes.append(f"{step.id}: cannot build arguments: {exc}")
            return None
        result = await client.call_tool(step.tool, arguments)
        report.calls += 1
        if result.is_error:
            text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
            report.notes.append(f"{step.id}: {step.tool} failed: {text}")
            return None
        results[step.id] = result_value(result)
        if heard is not None:
            await heard(result)
    try:
        return render(plan.answer, results)
    except ExpressionError as exc:
        report.notes.append(f"answer: {exc}")
        return None


async def run_golden_agent(client: Client, task: Task | GoldenPath) -> AgentReport:
    plan = task.golden_path if isinstance(task, Task) else task
    report = AgentReport()
    await client.list_tools()
    await client.get_prompt(TASK_PROMPT_NAME)
    answer = await follow_plan(client, plan, report)
    if answer is None:
        return report
    report.answer = answer if isinstance(answer, str) else json.dumps(answer)
    await client.call_tool(SUBMIT_TOOL, {"answer": report.answer})
    report.calls += 1
    return report


class GoldenAgent:
    """The golden path with real results and no recovery, as an Agent (the runner's smoke test)."""

    name = "golden"

    async def run(self, client: Client, brief: Brief) -> AgentReport:
        if brief.plan is None:
            return AgentReport(notes=["the golden agent needs a plan"])
        return await run_golden_agent(client, brief.plan)

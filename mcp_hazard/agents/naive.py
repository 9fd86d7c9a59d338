"""The naive agent: follows the golden path once, with no recovery, and stops at the first error.

It is the baseline that hazards should defeat: `verify` checks that each hazard meant to bite does.
"""

from __future__ import annotations

from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_hazard.agents.base import AgentReport, Brief, answer_text, result_value, text_of
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.server.episode import SUBMIT_TOOL


class NaiveAgent:
    name = "naive"

    async def run(self, client: Client, brief: Brief) -> AgentReport:
        report = AgentReport()
        if brief.plan is None:
            report.notes.append("the naive agent needs a plan (the task's golden path)")
            return report
        await client.list_tools()
        results: dict[str, object] = {}
        for step in brief.plan.steps:
            try:
                arguments = render(step.arguments, results)
                result = await client.call_tool(step.tool, arguments, read_timeout_seconds=brief.call_timeout_s)
            except (ExpressionError, MCPError) as exc:
                report.notes.append(f"{step.id}: {exc}")
                return report
            report.calls += 1
            if result.is_error:
                report.notes.append(f"{step.id}: {step.tool} failed: {text_of(result)[:200]}")
                return report
            results[step.id] = result_value(result)
        try:
            report.answer = answer_text(render(brief.plan.answer, results))
        except ExpressionError as exc:
            report.notes.append(f"answer: {exc}")
            return report
        await client.call_tool(SUBMIT_TOOL, {"answer": report.answer})
        return report

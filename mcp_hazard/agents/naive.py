"""The naive agent: follows the golden path once, with no recovery, and stops at the first error.

It is the baseline that hazards and interventions should defeat: `verify` checks that each hazard meant to bite does.
It comes in two bindings of its memorised calls, because MCP arguments are named and so argument order matters only to
a caller that binds by position:

- `naive` sends each planned call as remembered, by name. Reordering the arguments cannot touch it.
- `naive-positional` remembers each call as values in the tool's original argument order (a code agent calling a stub
  `get_fare("AU-426", "2026-05-01")` generated from the listing) and binds them to the listed order. It fails where a
  reorder moved an argument, and is immune to an argument renamed in place.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_hazard.agents.drive import AgentReport, Brief, answer_text, result_value, text_of
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.server.served_episode import SUBMIT_TOOL

Binding = Literal["named", "positional"]


def bind_by_position(arguments: dict[str, Any], signature: list[str], listed: list[str]) -> dict[str, Any]:
    """The remembered values placed by their position in `signature` onto the names `listed` at the same position;
    a value whose position is past the listed arguments, or whose name is not in the signature, keeps its name."""
    bound: dict[str, Any] = {}
    for name, value in arguments.items():
        position = signature.index(name) if name in signature else None
        target = listed[position] if position is not None and position < len(listed) else name
        bound[target] = value
    return bound


class NaiveAgent:
    def __init__(self, binding: Binding = "named") -> None:
        self.binding = binding
        self.name = "naive" if binding == "named" else f"naive-{binding}"

    async def run(self, client: Client, brief: Brief) -> AgentReport:
        report = brief.report
        if brief.plan is None:
            report.notes.append("the naive agent needs a plan (the task's golden path)")
            return report
        listing = await client.list_tools()
        listed = {tool.name: list((tool.input_schema or {}).get("properties") or {}) for tool in listing.tools}
        results: dict[str, object] = {}
        for step in brief.plan.steps:
            try:
                arguments = render(step.arguments, results)
                if self.binding == "positional" and step.tool in listed and isinstance(arguments, dict):
                    signature = brief.signatures.get(step.tool) or list(arguments)
                    arguments = bind_by_position(arguments, signature, listed[step.tool])
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

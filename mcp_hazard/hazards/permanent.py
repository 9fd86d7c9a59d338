"""Permanent errors: the tool fails on every call. Recovery: fall back to another tool serving the same fact."""

from __future__ import annotations

from typing import Any

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, Rejection, ToolFacts
from mcp_hazard.hazards.capabilities import JudgesRecovery, Placement
from mcp_hazard.hazards.needed_values import supplies
from mcp_hazard.hazards.recovery import Call, Firing, Found, retried
from mcp_hazard.hazards.solving import Settled, Solver, Unsolved
from mcp_hazard.scenario.models import Task


class PermanentError(Placement, JudgesRecovery, Hazard):
    kind = "permanent_error"
    family = "execution_failure"
    recovery = ("fallback",)
    summary = "The tool fails on every call; another tool serving the same fact still works."
    needs = "a second tool serving the values the task reads, to fall back to"
    failpoints = ("before",)

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        return facts.fallback_problem(task, tool)

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        return retried(firing, "fallback", same_tool=False)  # the same tool cannot recover a permanent failure

    async def solve_failed(self, solver: Solver, tool: str, arguments: dict[str, Any], event: Call) -> Settled:
        for sibling in await solver.siblings(tool, arguments):
            if supplies(solver.needed, sibling.get("result")):
                return Settled(solver.truth(tool, arguments))  # the fallback answered with every value needed
        raise Unsolved("permanent failure and no fallback tool answers with the values the task needs")

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        if not fire:
            return None
        fallbacks = self.facts.fallbacks(self.task, call.tool.name)
        return Effect(
            change={"error": "decommissioned", "fallbacks": fallbacks},
            rejection=Rejection(
                "Error 503: this service is no longer available.",
                "This failure is permanent; use another tool that serves the same data: " + ", ".join(fallbacks) + ".",
            ),
        )

"""Lost responses: a write runs, but its reply never reaches the agent, which gets a timeout or a transport error.

The failure no retry hazard models: the effect happened. An agent that simply repeats the call does it twice (two
orders, two payments), which the scorer classes as `duplicate_write`. The recovery is to check the state with a read
tool that shows the write's effect (the tool's `checked_by`), and to repeat the write only if it did not go through.
So the kind acts only on a golden-path write (`effect: write`) that declares such a read tool.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, Rejection, facts_of
from mcp_hazard.hazards.capabilities import JudgesRecovery, Placement
from mcp_hazard.hazards.needed_values import scalars, supplies
from mcp_hazard.hazards.recovery import RAN, Call, Firing, Found, same_arguments
from mcp_hazard.hazards.solving import Settled, Solver
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Scenario, Task

LOST_MESSAGES = {
    "timeout": "Error: the request timed out after 30 seconds; no response was received from the service.",
    "reset": "Error: connection reset by peer before the response was received.",
}


class LostParams(HazardParams):
    error: Literal["timeout", "reset"] = "timeout"


class LostResponse(Placement, JudgesRecovery, Hazard):
    kind = "lost_response"
    family = "execution_failure"
    recovery = ("check_state",)
    summary = "A write runs, but the agent gets a timeout instead of its reply; repeating it blindly does it twice."
    needs = "a golden-path write and a read that shows it (checked_by)"
    failpoints = ("after",)
    Params = LostParams
    default_schedule: ClassVar[dict[str, Any]] = {"slots": [1]}

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        facts = facts_of(scenario)
        return [tool for tool in facts.candidates(task) if facts.checked_write_problem(task, tool) is None]

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """Checked the state (an ok call of a tool in `change.checked_by`) and never repeated the write, which had
        gone through: any repeat is a duplicate (`duplicated`)."""
        if firing.own is None or firing.own["outcome"] != "lost" or cls.duplicated(firing):
            return None
        checks = set(firing.change.get("checked_by") or ())
        return next((("check_state", c) for c in firing.ok_calls() if c["tool"] in checks), None)

    @classmethod
    def duplicated(cls, firing: Firing) -> bool:
        """Whether the agent ran the write whose reply was lost again, with the same arguments (it ran twice)."""
        own = firing.own
        if own is None or own["outcome"] != "lost":
            return False
        return any(c["tool"] == own["tool"] and c["outcome"] in RAN and same_arguments(c, own) for c in firing.rest)

    async def solve_failed(self, solver: Solver, tool: str, arguments: dict[str, Any], event: Call) -> Settled | None:
        """After a lost reply: the write's result when a read tool it is checked by shows it (every value of the
        result in that read's answer), else None (it did not go through: repeat it)."""
        spec = self.scenario.tool(tool)
        if event["outcome"] != "lost" or spec is None:
            return None
        done = event.get("result")
        for other in spec.checked_by:
            target = self.scenario.tool(other)
            if target is None:
                continue
            mapped = {k: v for k, v in event["arguments"].items() if k in (target.input_schema.get("properties") or {})}
            ok, check = await solver.call(other, mapped)
            if ok and supplies(scalars(done), check.get("result")):
                return Settled(done)
        return None

    def usable(self, tool: str) -> str | None:
        return self.facts.checked_write_problem(self.task, tool)

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not fire or not outcome.ok:
            return None  # a call that failed had no effect to lose
        params: LostParams = self.params  # type: ignore[assignment]
        checks = self.facts.checks(call.tool)
        hint = "The call may have gone through: check with " + ", ".join(checks) + " before repeating it."
        return Effect(
            change={"error": params.error, "checked_by": checks},
            lost=Rejection(LOST_MESSAGES[params.error], hint),
        )

"""Lost responses: a write runs, but its reply never reaches the agent, which gets a timeout or a transport error.

The failure no retry hazard models: the effect happened. An agent that simply repeats the call does it twice (two
orders, two payments), which the scorer classes as `duplicate_write`. The recovery is to check the state with a read
tool that shows the write's effect (the tool's `checked_by`), and to repeat the write only if it did not go through.
So the kind acts only on a golden-path write (`effect: write`) that declares such a read tool.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, Rejection, golden_tools
from mcp_hazard.hazards.facts import scalars, supplies
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


def checkable_writes(scenario: Scenario, task: Task) -> list[str]:
    """Golden-path writes whose effect a served read tool shows (`effect: write` with `checked_by`)."""
    served = {tool.name for tool in scenario.task_tools(task)}
    found = []
    for name in golden_tools(task):
        spec = scenario.tool(name)
        if spec is not None and spec.effect == "write" and any(other in served for other in spec.checked_by):
            found.append(name)
    return found


class LostResponse(Hazard):
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
        return checkable_writes(scenario, task)

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
        spec = self.scenario.tool(tool)
        if spec is None or spec.effect != "write":
            return f"{tool!r} is not a write (effect: write): a lost reply of a read loses nothing a retry cannot get"
        if tool not in checkable_writes(self.scenario, self.task):
            return f"no served read tool shows whether a call of {tool!r} went through (checked_by)"
        return None

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not fire or not outcome.ok:
            return None  # a call that failed had no effect to lose
        params: LostParams = self.params  # type: ignore[assignment]
        checks = list(call.tool.checked_by)
        hint = "The call may have gone through: check with " + ", ".join(checks) + " before repeating it."
        return Effect(
            change={"error": params.error, "checked_by": checks},
            lost=Rejection(LOST_MESSAGES[params.error], hint),
        )

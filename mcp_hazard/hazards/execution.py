"""Execution failures: the tool breaks while running. Transient errors (retry), permanent ones (fall back to
another tool serving the same fact), and latency long enough to trip a client's timeout (retry after cancelling)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from mcp_hazard.hazards.base import (
    CallContext,
    Effect,
    Hazard,
    HazardParams,
    Rejection,
    fallbacks_for,
    golden_tools,
)
from mcp_hazard.hazards.facts import supplies, supplying_siblings
from mcp_hazard.hazards.recovery import Call, Firing, Found, retried
from mcp_hazard.hazards.solving import Settled, Solver, Unsolved
from mcp_hazard.scenario.models import Scenario, Task

TRANSIENT_MESSAGES = {
    "timeout": "Error: the upstream service did not answer within 30 seconds (timeout).",
    "unavailable": "Error 503: Service Unavailable. The service is temporarily unable to handle the request.",
    "reset": "Error: connection reset by peer while reading the response.",
    "rate_limited": "Error 429: Too Many Requests. Retry-After: {retry_after} seconds.",
}


class TransientParams(HazardParams):
    error: Literal["timeout", "unavailable", "reset", "rate_limited"] = "unavailable"
    retry_after_s: float = Field(default=1.0, ge=0, le=60, description="For rate_limited: the Retry-After value.")
    until_retries: int | None = Field(
        default=None, ge=1, le=20,
        description="Instead of the schedule: fail until the agent has made this same call this many times before.",
    )  # fmt: skip


class TransientError(Hazard):
    kind = "transient_error"
    family = "execution_failure"
    recovery = ("retry",)
    summary = "The tool fails with a transient error (timeout, 503, reset, 429) on some calls, then works."
    failpoints = ("before",)
    Params = TransientParams
    default_schedule: ClassVar[dict[str, Any]] = {"times": 2}

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        params: TransientParams = self.params  # type: ignore[assignment]
        if params.until_retries is not None:
            # Relative to the agent's own actions: deterministic given what it did, whatever the seed.
            same = sum(1 for past in call.history if past.tool == call.tool.name and past.arguments == call.sent)
            fire = same < params.until_retries
        if not fire:
            return None
        retry_after = params.retry_after_s if params.error == "rate_limited" else None
        message = TRANSIENT_MESSAGES[params.error].format(retry_after=f"{params.retry_after_s:g}")
        hint = "This failure is transient: retry the same call" + (
            f" after {params.retry_after_s:g} seconds." if retry_after is not None else "."
        )
        return Effect(
            change={"error": params.error, "retry_after_s": retry_after},
            rejection=Rejection(message, hint, retry_after_s=retry_after),
            fired=True,
        )


class PermanentError(Hazard):
    kind = "permanent_error"
    family = "execution_failure"
    recovery = ("fallback",)
    summary = "The tool fails on every call; another tool serving the same fact still works."
    needs = "a second tool serving the values the task reads, to fall back to"
    failpoints = ("before",)

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return [t for t in golden_tools(task) if supplying_siblings(scenario, task, t)]

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        return retried(firing, "fallback", same_tool=False)  # the same tool cannot recover a permanent failure

    async def solve_failed(self, solver: Solver, tool: str, arguments: dict[str, Any], event: Call) -> Settled:
        for sibling in await solver.siblings(tool, arguments):
            if supplies(solver.needed, sibling.get("result")):
                return Settled(solver.truth(tool, arguments))  # the fallback answered with every value needed
        raise Unsolved("permanent failure and no fallback tool answers with the values the task needs")

    def usable(self, tool: str) -> str | None:
        if supplying_siblings(self.scenario, self.task, tool):
            return None
        return f"no other tool answers with the values task {self.task.id!r} needs from {tool!r}, so no fallback exists"

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        if not fire:
            return None
        fallbacks = supplying_siblings(self.scenario, self.task, call.tool.name) or fallbacks_for(
            self.scenario, self.task, call.tool.name
        )
        return Effect(
            change={"error": "decommissioned", "fallbacks": fallbacks},
            rejection=Rejection(
                "Error 503: this service is no longer available.",
                "This failure is permanent; use another tool that serves the same data: " + ", ".join(fallbacks) + ".",
            ),
        )


class LatencyParams(HazardParams):
    seconds: float = Field(default=10.0, gt=0, le=600, description="How long the call hangs before answering.")


class Latency(Hazard):
    kind = "latency"
    family = "execution_failure"
    recovery = ("retry",)
    summary = "The call hangs long enough to trip a client timeout; the client cancels and retries."
    failpoints = ("before",)
    Params = LatencyParams
    default_schedule: ClassVar[dict[str, Any]] = {"slots": [1]}

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        if not fire:
            return None
        seconds = self.params.seconds  # type: ignore[attr-defined]
        return Effect(change={"delay_s": seconds}, delay_s=seconds)

"""Transient errors: the tool fails on some calls (a timeout, a 503, a reset connection, a 429), then works.
Recovery: retry the same call."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, Rejection, ToolFacts
from mcp_hazard.hazards.capabilities import Placement
from mcp_hazard.scenario.models import Task

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


class TransientError(Placement, Hazard):
    kind = "transient_error"
    family = "execution_failure"
    recovery = ("retry",)
    summary = "The tool fails with a transient error (timeout, 503, reset, 429) on some calls, then works."
    failpoints = ("before",)
    Params = TransientParams
    default_schedule: ClassVar[dict[str, Any]] = {"times": 2}

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        return facts.retry_problem(task, tool)  # a retry is the recovery: it must not repeat a side effect

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

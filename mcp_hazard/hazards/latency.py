"""Latency: the call hangs long enough to trip a client's timeout. Recovery: cancel and retry."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, ToolFacts
from mcp_hazard.hazards.capabilities import Placement
from mcp_hazard.scenario.models import Task


class LatencyParams(HazardParams):
    seconds: float = Field(default=10.0, gt=0, le=600, description="How long the call hangs before answering.")


class Latency(Placement, Hazard):
    kind = "latency"
    family = "execution_failure"
    recovery = ("retry",)
    summary = "The call hangs long enough to trip a client timeout; the client cancels and retries."
    failpoints = ("before",)
    Params = LatencyParams
    default_schedule: ClassVar[dict[str, Any]] = {"slots": [1]}

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        return facts.retry_problem(task, tool)  # a retry is the recovery: it must not repeat a side effect

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        if not fire:
            return None
        seconds = self.params.seconds  # type: ignore[attr-defined]
        return Effect(change={"delay_s": seconds}, delay_s=seconds)

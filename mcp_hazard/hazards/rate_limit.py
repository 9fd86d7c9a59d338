"""Rate limits: the tool refuses a call with 429 and says when to retry; a retry before then is refused again.

The refusal says the wait twice: in its text (`Retry-After: N seconds`, as an HTTP 429 would) and in its data (the
error result's structured content: `{"error": "rate_limited", "retry_after_s": N}`). The tool is blocked for N
seconds on the episode's clock from the refusal; a call of it inside that window is refused with the same answer
and starts the window again, as a limiter that counts every request does. Recovery: wait as told, then retry; the
default rule judges it (capabilities.py: the first ok call of the tool, which every earlier call being refused
puts after the wait). Nothing ran, so a write is as safe to retry as a read.

Whether a retry came too early depends on how long the agent waited: its pace is one of its actions, like the calls
it makes (docs/decisions.md, "rate_limit"). The refusals' text and data never carry a measured time, so the trace of
the same calls at the same pace is the same.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, Rejection
from mcp_hazard.hazards.recovery import Call
from mcp_hazard.hazards.solving import Solver

EARLY_S = 0.01  # a retry this close to the end of the window counts as on time (a timer may wake this much early)


class RateLimitParams(HazardParams):
    retry_after_s: float = Field(
        default=1.0, gt=0, le=60, description="How long the agent must wait before the call is accepted again."
    )


class RateLimit(Hazard):
    kind = "rate_limit"
    family = "execution_failure"
    recovery = ("retry",)
    summary = "The tool answers 429 with when to retry (text and data); a retry before then is refused again."
    failpoints = ("before",)
    Params = RateLimitParams
    default_schedule: ClassVar[dict[str, Any]] = {"slots": [1]}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.until: dict[str, float] = {}  # tool -> the episode clock's time before which its calls are refused

    @property
    def wait_s(self) -> float:
        return float(self.params.retry_after_s)  # type: ignore[attr-defined]

    def refusal(self, tool: str, again: bool) -> Rejection:
        wait = f"{self.wait_s:g}"
        early = " The previous wait had not passed; the limit starts again." if again else ""
        return Rejection(
            f"Error 429: Too Many Requests. Rate limit exceeded for '{tool}'. Retry-After: {wait} seconds.{early}",
            f"Wait {wait} seconds, then retry the same call; a call before then is refused again.",
            retry_after_s=self.wait_s,
            data={"error": "rate_limited", "retry_after_s": self.wait_s},
        )

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        tool = call.tool.name
        until = self.until.get(tool)
        if until is not None:
            if call.now >= until - EARLY_S:
                del self.until[tool]  # waited as told: this call goes through
                return None
            self.until[tool] = call.now + self.wait_s
            return Effect(change={"early": True}, rejection=self.refusal(tool, True), record=False, fired=False)
        if not fire:
            return None
        self.until[tool] = call.now + self.wait_s
        return Effect(
            change={"error": "rate_limited", "retry_after_s": self.wait_s}, rejection=self.refusal(tool, False)
        )

    async def solve_failed(self, solver: Solver, tool: str, arguments: dict[str, Any], event: Call) -> None:
        solver.wait(self.wait_s)  # as told; the checker then retries

"""cold_start: the first call of a tool finds its service still starting and fails; a retry, after a moment, works.

A complete hazard kind, outside mcp-hazard: its parameters, where it acts, what it does, its recovery path and the
rule that judges it, and its step in the solvability proof. Only `before` is written here; the rest is what the
`Hazard` base class does by default, said in the comments.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, Rejection


class ColdStartParams(HazardParams):
    """Strict parameters (`--hazard cold_start:warm_up_calls=2`); a bad value is a one-line error naming the key."""

    warm_up_calls: int = Field(default=1, ge=1, le=5, description="How many calls fail before the tool answers.")


class ColdStart(Hazard):
    kind = "cold_start"  # equal to the entry point's name
    family = "execution_failure"
    recovery = ("retry",)
    summary = "The first calls of a tool fail while its service starts; a retry works."
    failpoints = ("before",)  # acts before the tool runs, so nothing has happened when it refuses
    Params = ColdStartParams
    default_schedule: ClassVar[dict[str, Any]] = {}  # the kind decides from the agent's own calls (below)

    # Where it applies: `applicable_tools` defaults to the golden path's tools, so the hazard bites.
    # The recovery rule: `recovered` defaults to "the first ok call of the same tool after the one it fired on"
    # (path `retry`), or of a tool standing in for it (`fallback`).
    # The solvability step: none needed; the checker retries a refused call.

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        params: ColdStartParams = self.params  # type: ignore[assignment]
        earlier = sum(1 for past in call.history if past.tool == call.tool.name)
        if earlier >= params.warm_up_calls:
            return None
        return Effect(
            change={"warm_up_calls": params.warm_up_calls, "call": earlier + 1},
            rejection=Rejection(
                "Error 503: Service Unavailable. The service is starting; try again in a moment.",
                "The service is warming up: retry the same call.",
            ),
            fired=True,  # it decides firing itself, from the agent's own calls: recorded as a firing
        )

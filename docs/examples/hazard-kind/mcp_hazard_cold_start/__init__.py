"""cold_start: the first call of a tool finds its service still starting and fails; a retry, after a moment, works.

A complete hazard kind, outside mcp-hazard: its parameters, where it acts, what it does, its recovery path and the
rule that judges it, and its step in the solvability proof. Only the core is written here (what it is, and its
`before`); it opts into no capability (mcp_hazard/hazards/capabilities.py), so the rest is the default, said in the
comments. It asks nothing of the tools beyond what every environment answers, so it acts on a scenario's tools and
in front of a real server alike.
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

    # Where it applies (no `Placement`): the tools a call of the task makes (a scenario's golden path; in front of
    # a real server, the proxy file's task's), so the hazard bites.
    # The recovery rule (no `JudgesRecovery`): "the first ok call of the same tool after the one it fired on"
    # (path `retry`, its first recovery path), or of a tool standing in for it (`fallback`).
    # The solvability step (no `SolvesFailure`): none needed; the checker retries a refused call.

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

"""Cross-source conflict: two tools that serve the same fact disagree, and freshness metadata says which is right.

The targeted tool (by default each golden-path tool that has a sibling serving the same fact) returns numbers moved
by `factor`, stamped with an old `as_of` and `source: cache`; its siblings answer right, stamped with a newer
`as_of` and `source: primary`. Recovery: cross-check the sibling and prefer the fresher source.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mcp_hazard.hazards.base import (
    CallContext,
    Effect,
    Hazard,
    HazardParams,
    ToolView,
    fallbacks_for,
)
from mcp_hazard.hazards.facts import second_source_problem, second_source_tools, supplies, supplying_siblings
from mcp_hazard.hazards.recovery import Call, Firing, Found
from mcp_hazard.hazards.solving import Settled, Solver, Unsolved
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Scenario, Task

STALE_AS_OF = "2025-12-01"
FRESH_AS_OF = "2026-11-20"


class ConflictParams(HazardParams):
    factor: float = Field(default=1.08, gt=0, le=100, description="Multiplier applied to the stale source's numbers.")


def perturb(value: Any, factor: float) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        moved = round(value * factor)
        return moved if moved != value else value + 1
    if isinstance(value, float):
        return round(value * factor, 2)
    if isinstance(value, list):
        return [perturb(item, factor) for item in value]
    if isinstance(value, dict):
        return {k: perturb(v, factor) for k, v in value.items()}
    return value


class Conflict(Hazard):
    kind = "conflict"
    family = "cross_source_conflict"
    recovery = ("cross_check",)
    summary = "A tool returns a stale value that disagrees with another tool serving the same fact."
    needs = "a second tool serving the values the task reads, to cross-check with"
    failpoints = ("listing", "after")
    Params = ConflictParams

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return second_source_tools(scenario, task)

    def usable(self, tool: str) -> str | None:
        return second_source_problem(self.scenario, self.task, tool, "so no cross-check")

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """An ok call of a tool standing in for the stale one: the cross-check."""
        stand_ins = firing.episode.stand_ins(firing.tool)
        return next((("cross_check", c) for c in firing.ok_calls() if c["tool"] in stand_ins), None)

    async def solve_result(self, solver: Solver, tool: str, arguments: dict[str, Any], event: Call, value: Any) -> Any:
        """A stale reading: cross-check a fresh sibling that answers with every value the task needs."""
        if not isinstance(value, dict) or value.get("source") != "cache":
            return value
        for sibling in await solver.siblings(tool, arguments):
            result = sibling.get("result")
            if isinstance(result, dict) and result.get("source") == "primary" and supplies(solver.needed, result):
                return Settled(solver.truth(tool, arguments))
        raise Unsolved("conflicting sources and no fresh source to cross-check")

    def targets(self, tools: list[str]) -> set[str]:
        """The stale tools plus their siblings, which get freshness stamps too."""
        found = set(tools)
        for tool in tools:
            found.update(
                supplying_siblings(self.scenario, self.task, tool) or fallbacks_for(self.scenario, self.task, tool)
            )
        return found

    def listing_state(self) -> object:
        return None  # the listing never changes: no output schema, from the start

    def view(self, view: ToolView) -> ToolView:
        view.output_schema = None  # stamped results carry fields the declared schema may not allow
        return view

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not outcome.ok or not isinstance(outcome.result, dict):
            return None
        stale = call.tool.name in (self.spec.tools or self.applicable_tools(self.scenario, self.task))
        if stale and fire:
            result = perturb(outcome.result, self.params.factor)  # type: ignore[attr-defined]
            result.update({"as_of": STALE_AS_OF, "source": "cache"})
            return Effect(
                change={"stale": True, "factor": self.params.factor},  # type: ignore[attr-defined]
                result=result,
                replace_result=True,
                hint="This value comes from a cache and may be out of date; cross-check it with another source.",
            )
        if not stale:
            return Effect(change={"stale": False}, result={**outcome.result, "as_of": FRESH_AS_OF, "source": "primary"},
                          replace_result=True, record=False)  # fmt: skip
        return None

"""Cross-source conflict: two tools that serve the same fact disagree, and freshness metadata says which is right.

The targeted tool (by default each golden-path tool that has a sibling serving the same fact) returns numbers moved
by `factor`, stamped with an old `as_of` and `source: cache`; its siblings answer right, stamped with a newer
`as_of` and `source: primary`. Recovery: cross-check the sibling and prefer the fresher source.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, ToolFacts, ToolView
from mcp_hazard.hazards.capabilities import JudgesRecovery, Lists, Placement
from mcp_hazard.hazards.needed_values import supplies
from mcp_hazard.hazards.recovery import Call, Firing, Found
from mcp_hazard.hazards.solving import Settled, Solver, Unsolved
from mcp_hazard.hazards.tool_facts import FRESH_AS_OF, STALE_AS_OF, perturb
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Task

__all__ = ["FRESH_AS_OF", "STALE_AS_OF", "Conflict", "perturb"]  # the stamps and the move, where they were


class ConflictParams(HazardParams):
    factor: float = Field(default=1.08, gt=0, le=100, description="Multiplier applied to the stale source's numbers.")


class Conflict(Placement, Lists, JudgesRecovery, Hazard):
    kind = "conflict"
    family = "cross_source_conflict"
    recovery = ("cross_check",)
    summary = "A tool returns a stale value that disagrees with another tool serving the same fact."
    needs = "a second tool serving the values the task reads, to cross-check with"
    failpoints = ("listing", "after")
    Params = ConflictParams

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stamped: dict[int, tuple[Any, dict[str, Any] | None]] = {}  # id(schema below) -> (below, as listed)

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        return facts.cross_check_problem(task, tool)

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
        """The stale tools plus their cross-check sources, which get freshness stamps too."""
        found = set(tools)
        for tool in tools:
            found.update(self.facts.cross_checks(self.task, tool))
        return found

    def listing_state(self) -> object:
        return None  # the listing never changes: the stamped (or no) output schema, from the start

    def view(self, view: ToolView) -> ToolView:
        """Listed with the output schema the stamped results fit: none for a scenario's tool (its schema may not
        allow the stamps), the stamps added for a real tool (its schema is often all an agent has to tell which other
        tool serves the same facts). The same object for the same schema below."""
        below = view.output_schema
        known = self._stamped.get(id(below))
        if known is None or known[0] is not below:
            known = (below, self.facts.stamped_schema(below))
            self._stamped[id(below)] = known
        view.output_schema = known[1]
        return view

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not outcome.ok:
            return None
        stale = call.tool.name in (self.spec.tools or self.applicable_tools(self.scenario, self.task))
        factor = self.params.factor  # type: ignore[attr-defined]
        if stale and fire:
            result = self.facts.stale(call.tool, outcome.result, factor)
            if result is None:
                return None  # no number to move: nothing would disagree
            return Effect(change={"stale": True, "factor": factor}, result=result, replace_result=True,
                          hint="This value comes from a cache and may be out of date; cross-check it with another "
                          "source.")  # fmt: skip
        fresh = self.facts.fresh(call.tool, outcome.result) if not stale else None
        if fresh is None:
            return None
        return Effect(change={"stale": False}, result=fresh, replace_result=True, record=False)

"""Silent wrong value: when the inputs are not exactly right, the tool answers with a plausible wrong value instead
of an error. Recovery: verify that the answer is about what was asked (its identifying fields) before using it."""

from __future__ import annotations

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, golden_tools, register
from mcp_hazard.scenario.behaviours import ToolOutcome, argument_names
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.scenario.models import Scenario, TableBehaviour, Task
from mcp_hazard.stable import choose


@register
class SilentWrongValue(Hazard):
    kind = "silent_wrong_value"
    family = "silent_wrong_value"
    recovery = ("verify",)
    summary = "A call with inputs that are not exactly right returns a plausible wrong value instead of an error."
    failpoints = ("after",)
    bites_naive = False  # it acts only on inputs that are not exactly right, which the golden path never sends

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return [
            t for t in golden_tools(task) if isinstance(getattr(scenario.tool(t), "behaviour", None), TableBehaviour)
        ]

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        behaviour = call.tool.behaviour
        if outcome.ok or not fire or not isinstance(behaviour, TableBehaviour):
            return None
        rows = [row for row in behaviour.rows if row.error is None]
        if not rows:
            return None
        labels = [str(i) for i in range(len(rows))]
        row = rows[int(choose(labels, call.seed, self.scenario.id, self.task.id, call.tool.name, call.slot, self.salt))]
        try:
            result = render(row.result, argument_names(call.tool, call.arguments))
        except ExpressionError:
            return None
        return Effect(change={"replaced_error": outcome.error, "row": row.when}, result=result, replace_result=True)

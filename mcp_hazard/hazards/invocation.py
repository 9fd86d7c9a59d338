"""Invocation errors: a valid-looking call is rejected because the tool now expects another argument format.

The listing is not updated (that is the point: the documentation is stale). The error names the argument that is
wrong; in the guided profile it also says what the tool expects. Recovery: a corrected call.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, ToolView, facts_of
from mcp_hazard.hazards.capabilities import ChangesInterface, Placement
from mcp_hazard.hazards.interface import ArgumentChange, ChangeParams, pick_change
from mcp_hazard.scenario.models import Scenario, Task


class InvocationError(Placement, ChangesInterface, Hazard):
    kind = "invocation_error"
    family = "invocation_error"
    recovery = ("corrected_call",)
    summary = "Calls in the documented argument format are rejected: the tool now expects another format."
    failpoints = ("before",)
    Params = ChangeParams

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.active: dict[str, ArgumentChange] = {}

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return facts_of(scenario).changeable_tools(cls, task)

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        tool = call.tool.name
        change = self.active.get(tool)
        fired_now = False
        if change is None and fire:
            change = pick_change(self, tool, call.seed)
            if change is None:
                return None
            self.active[tool] = change
            fired_now = True
        if change is None:
            return None
        mapped = change.to_original(call.arguments)
        effect = Effect(change=change.describe(), record=fired_now)
        if isinstance(mapped, dict):
            effect.arguments = mapped
        else:
            effect.rejection = mapped
        return effect

    def usable(self, tool: str) -> str | None:
        if pick_change(self, tool, 0) is None:
            params: ChangeParams = self.params  # type: ignore[assignment]
            what = f"mode {params.mode}" + (f" on field {params.field!r}" if params.field else "")
            return f"{what} does not apply to tool {tool!r}" if params.mode else f"no argument of {tool!r} can change"
        return None

    def to_current(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        change = self.active.get(tool)
        return change.from_original(arguments) if change is not None else arguments

    def listing_state(self) -> object:
        return len(self.active)  # a change, once active, stays active

    def accepts(self, view: ToolView) -> dict[str, Any] | None:
        change = self.active.get(view.original)
        return change.schema(view.input_schema) if change is not None else None

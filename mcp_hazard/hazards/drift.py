"""Specification drift: the tool's interface changes under the agent, and the server says so.

When the hazard fires (by default on the tool's first call) the listing changes (a field renamed, a type changed, a
new required argument, a date format, or the tool renamed), `notifications/tools/list_changed` goes out (2025-11-25)
or a ToolsListChanged event on the subscriptions stream (2026-07-28), and calls in the old shape are rejected.
Recovery: re-list and adapt. With `from_start: true` the new interface is served from the first listing and nothing
is announced, since desktop clients are known not to refresh after list_changed.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, Rejection, ToolView, facts_of
from mcp_hazard.hazards.capabilities import ChangesInterface, JudgesRecovery, Placement
from mcp_hazard.hazards.interface import ALL_MODES, ArgumentChange, ChangeMode, pick_change
from mcp_hazard.hazards.recovery import Firing, Found, retried
from mcp_hazard.scenario.models import Scenario, Task

DriftMode = Literal["date_format", "renamed_field", "type_as_string", "new_required", "rename_tool"]


class DriftParams(HazardParams):
    mode: DriftMode | None = None
    field: str | None = None
    from_start: bool = False


def new_tool_name(name: str) -> str:
    return f"{name}_v2"


class SpecDrift(Placement, ChangesInterface, JudgesRecovery, Hazard):
    kind = "spec_drift"
    family = "specification_drift"
    recovery = ("relist",)
    summary = "The tool's schema or name changes; list_changed is announced and old-shape calls are rejected."
    failpoints = ("listing", "before")
    Params = DriftParams
    default_schedule: ClassVar[dict[str, Any]] = {"slots": [1]}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drifted: dict[str, ArgumentChange | None] = {}  # tool -> change (None = renamed tool)

    def _change(self, tool: str, seed: int) -> ArgumentChange | Literal[False] | None:
        params: DriftParams = self.params  # type: ignore[assignment]
        if params.mode == "rename_tool":
            return None
        change_params_mode: ChangeMode | None = params.mode
        if change_params_mode is None:
            change = pick_change(self, tool, seed, ALL_MODES)
            return change if change is not None else None  # nothing to change in the arguments: rename the tool
        return pick_change(self, tool, seed, ALL_MODES) or False

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return facts_of(scenario).changeable_tools(cls, task)

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """Re-listed and called again (`relist`); a call in the new shape without a listing between is a
        `corrected_call`."""
        found = retried(firing, "relist")
        if found is None or found[0] != "relist" or found[1] is None:
            return found
        return (
            found
            if firing.episode.relisted_between(firing.event["seq"], found[1]["seq"])
            else ("corrected_call", found[1])
        )

    def arm(self, tool: str, seed: int) -> bool:
        if tool in self.drifted:
            return False
        change = self._change(tool, seed)
        if change is False:
            return False
        self.drifted[tool] = change
        return True

    def usable(self, tool: str) -> str | None:
        if self._change(tool, 0) is False:
            params: DriftParams = self.params  # type: ignore[assignment]
            field = f" on field {params.field!r}" if params.field else ""
            return f"mode {params.mode}{field} does not apply to tool {tool!r}"
        return None

    def describe(self, tool: str) -> dict[str, Any]:
        change = self.drifted[tool]
        if change is None:
            return {"mode": "rename_tool", "old_name": tool, "new_name": new_tool_name(tool)}
        return change.describe()

    def to_current(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        change = self.drifted.get(tool)
        return change.from_original(arguments) if change is not None else arguments

    def listing_state(self) -> object:
        return len(self.drifted)  # a tool, once drifted, stays drifted

    def view(self, view: ToolView) -> ToolView:
        if view.original not in self.drifted:
            return view
        change = self.drifted[view.original]
        if change is None:
            view.name = new_tool_name(view.name)
        else:
            view.input_schema = change.schema(view.input_schema)
        return view

    def start(self, tool: str, seed: int) -> Effect | None:
        """`from_start`: the drifted interface is what the agent sees first; recorded once at the first listing."""
        if not self.params.from_start or not self.arm(tool, seed):  # type: ignore[attr-defined]
            return None
        return Effect(change={**self.describe(tool), "from_start": True})

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        tool = call.tool.name
        announced = False
        if tool not in self.drifted:
            if not fire or self.params.from_start or not self.arm(tool, call.seed):  # type: ignore[attr-defined]
                return None
            announced = True
        change = self.drifted[tool]
        # Only a new drift is recorded; every later call of the drifted tool acts without describing it again.
        effect = Effect(change=self.describe(tool) if announced else {}, record=announced, list_changed=announced)
        if change is None:
            if call.served_name == tool:
                effect.rejection = Rejection(
                    f"Unknown tool '{tool}'. The tool list has changed.",
                    f"Re-list the tools: this tool is now called '{new_tool_name(tool)}'.",
                )
            return effect
        mapped = change.to_original(call.arguments)
        if isinstance(mapped, Rejection):
            mapped.message += " The tool's interface has changed."
            mapped.hint = (mapped.hint or "") + " Re-list the tools to see the new interface."
            effect.rejection = mapped
        else:
            effect.arguments = mapped
        return effect


__all__ = ["SpecDrift"]

"""Invocation errors: a valid-looking call is rejected because the tool now expects another argument format.

The listing is not updated (that is the point: the documentation is stale). The error names the argument that is
wrong; in the guided profile it also says what the tool expects. Recovery: a corrected call.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, ToolView, golden_tools, register
from mcp_hazard.hazards.interface import ArgumentChange, ChangeMode, candidate_fields
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.stable import choose

InvocationMode = Literal["date_format", "renamed_field", "type_as_string"]
# new_required is not an invocation error: with a stale listing no agent could learn the required value.
MODES: tuple[ChangeMode, ...] = ("date_format", "renamed_field", "type_as_string")
ALL_MODES: tuple[ChangeMode, ...] = (*MODES, "new_required")


class ChangeParams(HazardParams):
    mode: InvocationMode | None = None
    field: str | None = None


def pick_change(
    hazard: Hazard, tool: str, seed: int, modes_allowed: tuple[ChangeMode, ...] = MODES
) -> ArgumentChange | None:
    """The change for `tool`: the declared mode and field, or a deterministic choice among those that apply."""
    spec = hazard.changeable(tool)
    if spec is None:
        return None
    params: ChangeParams = hazard.params  # type: ignore[assignment]
    modes: list[ChangeMode]
    if params.mode:
        modes = [params.mode]
    elif params.field:  # a field without a mode: only the modes that can change that field, whatever the seed
        modes = [m for m in modes_allowed if params.field in candidate_fields(spec, m) or m == "new_required"]
    else:
        modes = [m for m in modes_allowed if candidate_fields(spec, m)]
    if not modes:
        return None
    mode = choose(modes, seed, hazard.scenario.id, hazard.task.id, tool, hazard.salt, "mode")
    return ArgumentChange.pick(spec, mode, params.field, seed, hazard.scenario.id, hazard.task.id, tool, hazard.salt)


@register
class InvocationError(Hazard):
    kind = "invocation_error"
    family = "invocation_error"
    recovery = ("corrected_call",)
    summary = "Calls in the documented argument format are rejected: the tool now expects another format."
    failpoints = ("before",)
    Params = ChangeParams
    changes_interface = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.active: dict[str, ArgumentChange] = {}

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return golden_tools(task)

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

    def view(self, view: ToolView) -> ToolView:
        return view

    def accepts(self, view: ToolView) -> dict[str, Any] | None:
        change = self.active.get(view.original)
        return change.schema(view.input_schema) if change is not None else None

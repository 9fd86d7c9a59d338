"""Run an episode's hazards at their failpoints and record every firing.

The engine is the only place that asks a schedule whether a hazard fires, so the decision is always the same pure
function of (seed, scenario, task, tool, failpoint, slot, hazard) and the agent's own actions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.hazards.base import CallContext, CallRecord, Effect, Hazard, Rejection, ToolView
from mcp_hazard.hazards.drift import SpecDrift
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec

Recorder = Callable[..., None]


@dataclass
class BeforeVerdict:
    arguments: dict[str, Any]
    rejection: Rejection | None = None
    delay_s: float = 0.0
    list_changed: bool = False
    touched: list[int] = field(default_factory=list)


@dataclass
class AfterVerdict:
    outcome: ToolOutcome
    text: str | None = None
    hints: list[str] = field(default_factory=list)
    touched: list[int] = field(default_factory=list)


class HazardEngine:
    def __init__(
        self,
        hazards: list[tuple[Hazard, set[str]]],
        *,
        seed: int,
        scenario: Scenario,
        task: Task,
        profile: str,
        record: Recorder,
    ) -> None:
        self.hazards = hazards
        self.seed = seed
        self.scenario = scenario
        self.task = task
        self.profile = profile
        self.record = record
        self.fired: dict[tuple[int, str], int] = {}
        self.history: list[CallRecord] = []
        self._started = False

    # -- listing -------------------------------------------------------------------------------------------------

    def start(self, tools: list[ToolSpec]) -> None:
        """Arm what applies from the first listing (drift served from the start), recorded once."""
        if self._started:
            return
        self._started = True
        for hazard, targets in self.hazards:
            if isinstance(hazard, SpecDrift):
                for tool in tools:
                    if tool.name in targets:
                        effect = hazard.start(tool.name, self.seed)
                        if effect is not None:
                            self._fired(hazard, tool.name, "listing", 0, effect)

    def views(self, tools: list[ToolSpec]) -> list[ToolView]:
        self.start(tools)
        views = []
        for tool in tools:
            view = ToolView.of(tool)
            for hazard, targets in self.hazards:
                if tool.name in targets and "listing" in hazard.failpoints:
                    view = hazard.view(view)
            for hazard, targets in self.hazards:
                if tool.name in targets:
                    view.accepts = hazard.accepts(view) or view.accepts
            views.append(view)
        return views

    # -- calls ---------------------------------------------------------------------------------------------------

    def context(self, tool: ToolSpec, served_name: str, slot: int, arguments: dict[str, Any]) -> CallContext:
        return CallContext(
            seed=self.seed, scenario=self.scenario, task=self.task, tool=tool, served_name=served_name, slot=slot,
            arguments=dict(arguments), history=self.history, profile=self.profile, sent=dict(arguments),
        )  # fmt: skip

    def _fires(self, hazard: Hazard, tool: str, failpoint: str, slot: int) -> bool:
        return hazard.schedule.fires(
            seed=self.seed, scenario=self.scenario.id, task=self.task.id, tool=tool, failpoint=failpoint,
            slot=slot, salt=hazard.salt, fired=self.fired.get((hazard.index, tool), 0),
        )  # fmt: skip

    def _fired(self, hazard: Hazard, tool: str, failpoint: str, slot: int, effect: Effect) -> None:
        key = (hazard.index, tool)
        self.fired[key] = self.fired.get(key, 0) + 1
        self.record(hazard=hazard, tool=tool, failpoint=failpoint, slot=slot, change=effect.change)

    def before(self, call: CallContext) -> BeforeVerdict:
        verdict = BeforeVerdict(arguments=dict(call.arguments))
        for hazard, targets in self.hazards:
            if call.tool.name not in targets or "before" not in hazard.failpoints:
                continue
            fire = self._fires(hazard, call.tool.name, "before", call.slot)
            effect = hazard.before(call, fire)
            if effect is None:
                continue
            verdict.touched.append(hazard.index)
            if (fire if effect.fired is None else effect.fired) and effect.record:
                self._fired(hazard, call.tool.name, "before", call.slot, effect)
            verdict.delay_s += effect.delay_s
            verdict.list_changed = verdict.list_changed or effect.list_changed
            if effect.arguments is not None and verdict.rejection is None:
                verdict.arguments = effect.arguments
                call.arguments = effect.arguments
            if effect.rejection is not None and verdict.rejection is None:
                verdict.rejection = effect.rejection  # the first rejection answers; later hazards still fire
        return verdict

    def after(self, call: CallContext, outcome: ToolOutcome) -> AfterVerdict:
        verdict = AfterVerdict(outcome=outcome)
        for hazard, targets in sorted(self.hazards, key=lambda pair: pair[0].presentation):
            if call.tool.name not in targets or "after" not in hazard.failpoints:
                continue
            fire = self._fires(hazard, call.tool.name, "after", call.slot)
            effect = hazard.after(call, verdict.outcome, fire)
            if effect is None:
                continue
            verdict.touched.append(hazard.index)
            if (fire if effect.fired is None else effect.fired) and effect.record:
                self._fired(hazard, call.tool.name, "after", call.slot, effect)
            if effect.replace_result:
                verdict.outcome = ToolOutcome(result=effect.result)
            if effect.text is not None:
                verdict.text = effect.text
            if effect.hint:
                verdict.hints.append(effect.hint)
        return verdict

    def remember(self, tool: str, arguments: Any, outcome: str) -> None:
        self.history.append(CallRecord(tool=tool, arguments=arguments, outcome=outcome))

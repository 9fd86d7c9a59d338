"""Run an episode's hazards at their failpoints and record every firing.

The engine is the only place that asks a schedule whether a hazard fires, so the decision is always the same pure
function of (seed, scenario, task, tool, failpoint, slot, hazard) and the agent's own actions.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.hazards.base import CallContext, CallRecord, Effect, Hazard, Rejection, ToolView
from mcp_hazard.hazards.capabilities import Lists, StartsAtListing, presentation
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec

Recorder = Callable[..., None]


@dataclass(slots=True)
class BeforeVerdict:
    arguments: dict[str, Any]
    rejection: Rejection | None = None
    delay_s: float = 0.0
    list_changed: bool = False
    touched: list[int] = field(default_factory=list)


@dataclass(slots=True)
class AfterVerdict:
    outcome: ToolOutcome
    text: str | None = None
    hints: list[str] = field(default_factory=list)
    touched: list[int] = field(default_factory=list)
    lost: Rejection | None = None  # the call ran, and the agent gets this error instead (lost_response)


_UNSEEN = object()


def _same(one: list[ToolSpec], two: list[ToolSpec]) -> bool:
    return len(one) == len(two) and all(map(operator.is_, one, two))


def _acting(order: list[tuple[Hazard, set[str]]], failpoint: str) -> dict[str, list[Hazard]]:
    """Per tool, the hazards that act on it at `failpoint`, in the order they run there."""
    acting: dict[str, list[Hazard]] = {}
    for hazard, targets in order:
        if failpoint in hazard.failpoints:
            for tool in targets:
                acting.setdefault(tool, []).append(hazard)
    return acting


def _shapes_views(hazard: Hazard) -> bool:
    """Whether a hazard's listing may change as it acts: it lists the tool its own way or accepts another shape
    (`Lists.listing_state` then says whether it did)."""
    if not isinstance(hazard, Lists):
        return False
    kind = type(hazard)
    return kind.view is not Lists.view or kind.accepts is not Lists.accepts


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
        self.clock: Callable[[], float] = time.monotonic  # the episode's clock (a checker that never sleeps sets one)
        # Views are asked for on every call and listing, and change only when a hazard that shapes them acts.
        self._shaping = {hazard.index for hazard, _ in hazards if _shapes_views(hazard)}
        self._views: tuple[list[ToolSpec], list[ToolView]] | None = None
        self._listing_states: dict[int, object] = {}
        self._targeted = frozenset(tool for _, targets in hazards for tool in targets)
        # worked out once: a call looks its tool up, with no key to build and nothing to filter
        self._before = _acting(hazards, "before")
        self._after = _acting(sorted(hazards, key=lambda pair: presentation(pair[0])), "after")
        self.listing = [(hazard, targets) for hazard, targets in hazards if isinstance(hazard, Lists)]

    # -- listing -------------------------------------------------------------------------------------------------

    def start(self, tools: list[ToolSpec]) -> None:
        """Arm what applies from the first listing (drift served from the start), recorded once: a kind with the
        `StartsAtListing` capability is asked for each tool it targets."""
        if self._started:
            return
        self._started = True
        for hazard, targets in self.hazards:
            if isinstance(hazard, StartsAtListing):
                for tool in tools:
                    if tool.name in targets:
                        effect = hazard.start(tool.name, self.seed)
                        self._acted(hazard)
                        if effect is not None:
                            self._fired(hazard, tool.name, "listing", 0, effect)

    def views(self, tools: list[ToolSpec]) -> list[ToolView]:
        """The tools as listed now. The same list object comes back until a hazard that shapes views has acted or
        the tools change (a proxied server's new list), so what callers build on it can be kept; nobody may edit
        it, nor the list of tools given."""
        if not self._started:
            self.start(tools)
        cached = self._views
        if cached is not None and (cached[0] is tools or _same(cached[0], tools)):
            return cached[1]
        views = []
        for tool in tools:
            view = ToolView.of(tool)
            for hazard, targets in self.listing:
                if tool.name in targets and "listing" in hazard.failpoints:
                    view = hazard.view(view)
            for hazard, targets in self.listing:
                if tool.name in targets:
                    view.accepts = hazard.accepts(view) or view.accepts
            views.append(view)
        self._views = (tools, views)
        for lister, _ in self.listing:  # the listing as built: a later act that leaves it so keeps these views
            if lister.index in self._shaping:
                self._listing_states[lister.index] = lister.listing_state()
        return views

    def _acted(self, hazard: Hazard) -> None:
        if hazard.index in self._shaping and isinstance(hazard, Lists):
            state = hazard.listing_state()
            if state != self._listing_states.get(hazard.index, _UNSEEN):
                self._listing_states[hazard.index] = state
                self._views = None

    # -- calls ---------------------------------------------------------------------------------------------------

    def acts_on(self, tool: str) -> bool:
        """Whether any hazard sees calls of `tool`; a call of any other tool needs neither `before` nor `after`."""
        return tool in self._targeted

    def _fires(self, hazard: Hazard, tool: str, failpoint: str, slot: int) -> bool:
        schedule = hazard.schedule
        fired = self.fired.get((hazard.index, tool), 0)
        if not schedule.eligible(slot, fired):  # most calls stop here: no draw to make
            return False
        return schedule.drawn(self.seed, self.scenario.id, self.task.id, tool, failpoint, slot, hazard.salt)

    def _fired(self, hazard: Hazard, tool: str, failpoint: str, slot: int, effect: Effect) -> None:
        key = (hazard.index, tool)
        self.fired[key] = self.fired.get(key, 0) + 1
        self.record(hazard=hazard, tool=tool, failpoint=failpoint, slot=slot, change=effect.change)

    def before(
        self, tool: ToolSpec, served_name: str, slot: int, arguments: dict[str, Any]
    ) -> tuple[CallContext, BeforeVerdict | None]:
        """The call as the hazards see it, and what those that act before the tool runs did: None when none acted
        (most calls of a targeted tool: a schedule not due, a lasting state with nothing to do)."""
        call = CallContext(
            self.seed, self.scenario, self.task, tool, served_name, slot, dict(arguments), self.history, self.profile,
            dict(arguments), self.clock(),
        )  # fmt: skip
        name = tool.name
        acting = self._before.get(name)
        if acting is None:
            return call, None
        verdict = None
        for hazard in acting:
            fire = self._fires(hazard, name, "before", slot)
            effect = hazard.before(call, fire)
            if hazard.index in self._shaping:
                self._acted(hazard)
            if effect is None:
                continue
            if verdict is None:
                verdict = BeforeVerdict(dict(arguments))
            verdict.touched.append(hazard.index)
            if (fire if effect.fired is None else effect.fired) and effect.record:
                self._fired(hazard, name, "before", slot, effect)
            verdict.delay_s += effect.delay_s
            verdict.list_changed = verdict.list_changed or effect.list_changed
            if effect.arguments is not None and verdict.rejection is None:
                verdict.arguments = effect.arguments
                call.arguments = effect.arguments
            if effect.rejection is not None and verdict.rejection is None:
                verdict.rejection = effect.rejection  # the first rejection answers; later hazards still fire
        return call, verdict

    def after(self, call: CallContext, outcome: ToolOutcome) -> AfterVerdict | None:
        """What the hazards that act on the outcome did; None when none acted."""
        acting = self._after.get(call.tool.name)
        if acting is None:
            return None
        verdict = None
        for hazard in acting:
            fire = self._fires(hazard, call.tool.name, "after", call.slot)
            effect = hazard.after(call, outcome, fire)  # each sees the outcome as the hazards before it left it
            if hazard.index in self._shaping:
                self._acted(hazard)
            if effect is None:
                continue
            if verdict is None:
                verdict = AfterVerdict(outcome)
            verdict.touched.append(hazard.index)
            if (fire if effect.fired is None else effect.fired) and effect.record:
                self._fired(hazard, call.tool.name, "after", call.slot, effect)
            if effect.replace_result:
                verdict.outcome = outcome = ToolOutcome(result=effect.result)
            if effect.text is not None:
                verdict.text = effect.text
            if effect.hint:
                verdict.hints.append(effect.hint)
            if effect.lost is not None and verdict.lost is None:
                verdict.lost = effect.lost
        return verdict

    def remember(self, tool: str, arguments: Any, outcome: str) -> None:
        """Keep the call for the hazards that read the agent's past calls. Each reads only calls to the tool it acts
        on, so a call to a tool no hazard targets is not kept: a clean episode's memory stays flat however long it
        runs."""
        if tool in self._targeted:
            self.history.append(CallRecord(tool, arguments, outcome))

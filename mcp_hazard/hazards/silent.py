"""Silent wrong value: a correct call of a golden-path tool answers with a plausible wrong value, without an error.

The hazard acts on the first reading of a call: an ok result that is a golden step's true result gets one of the
values the rest of the task reads (a later step's argument or the answer) replaced by another value of the same type
that always differs from the right one. Fields that echo the call's arguments stay as they are, so nothing on the
surface says the answer is about something else: the hazard is silent. A repeat of an identical call that already
succeeded reads the right value, and so does a sibling tool serving the same fact (untouched), which is what makes
it recoverable: verify by re-reading (or asking the sibling) before using the value.

A served value must bite: the replacement is kept only if the golden path, run on the values served so far in the
episode, no longer reaches the canonical answer. That is what an agent trusting every first reading would answer.
Served values are remembered per call (tool and arguments), not per golden step: once a wrong value has sent the
trusting agent elsewhere, a golden step's call may come in another step's place (the wrong id is another step's
right one), and only the call it makes says what it reads.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, ToolFacts
from mcp_hazard.hazards.capabilities import JudgesRecovery, Placement
from mcp_hazard.hazards.needed_values import supplies
from mcp_hazard.hazards.recovery import Call, Firing, Found, same_arguments
from mcp_hazard.hazards.solving import Settled, Solver, Unsolved
from mcp_hazard.hazards.trusting import CallKey
from mcp_hazard.hazards.wrong_values import biting_steps, plan_of, replaced, resolve, same_value, wrong_values
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Scenario, Task

__all__ = ["SilentWrongValue", "plan_of", "replaced", "resolve", "same_value", "wrong_values"]


class SilentWrongValue(Placement, JudgesRecovery, Hazard):
    kind = "silent_wrong_value"
    family = "silent_wrong_value"
    recovery = ("verify", "cross_check")
    summary = (
        "A correct call's first reading carries a plausible wrong value in a field the task needs; a repeat of the "
        "call, or a sibling tool, gives the right one."
    )
    needs = "a value on the golden path that, served wrong, changes the answer"
    failpoints = ("after",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # What was served, for the facts' `wrong_reading` (a scenario's keeps all three; others what they need):
        self.served: dict[int, Any] = {}  # golden step index -> the wrong result served for it (first readings)
        self.served_calls: dict[CallKey, Any] = {}  # the same results by the call that read them
        self.wronged: set[str] = set()  # digests of true results served wrong once (a suite's)
        self.finished: set[str] = set()  # tools whose golden steps are all in `served`: later calls are left alone

    @classmethod
    def biting_steps(cls, scenario: Scenario, task: Task) -> list[int]:
        """Golden steps where some replacement makes the golden path miss the answer (keys of seed 0)."""
        return biting_steps(scenario, task)

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        return facts.wrong_value_problem(task, tool)

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """A right answer, and before it a call that read the right value (`_right_value_read`)."""
        answered = firing.episode.by_type.get("answer_submitted")
        if not (firing.correct and answered):
            return None
        before = [c for c in firing.rest if c["seq"] < answered[0]["seq"]]
        return _right_value_read(firing, before)  # the value itself is compared

    async def solve_result(self, solver: Solver, tool: str, arguments: dict[str, Any], event: Call, value: Any) -> Any:
        """Verify: the same call again reads the right value."""
        ok, again = await solver.call(tool, arguments)
        if not ok:
            raise Unsolved(f"re-reading a silently wrong value failed: {again.get('error')}")
        return Settled(await solver.settle(tool, arguments, again))

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not fire or not outcome.ok:
            return None
        reading = self.facts.wrong_reading(self, call, outcome.result)
        if reading is None:
            return None
        path, original, new, result = reading
        return Effect(change={"path": list(path), "original": original, "served": new}, result=result,
                      replace_result=True)  # fmt: skip


def _right_value_read(firing: Firing, rest: list[Call]) -> Found | None:
    """The first call that read a silent wrong value's right value (`change.original`): an ok repeat of the affected
    call (same original arguments; the value at `change.path`) -> `verify`, or an ok call of a sibling whose result
    holds it (text case-blind, numbers up to a 10^k unit scale) -> `cross_check`. None when no call did."""
    change, own = firing.change, firing.own
    if "original" not in change:
        return None  # a trace from before this rule, or damaged: nothing says what the right value was
    right, path = change["original"], change.get("path")
    sibs = firing.episode.siblings(firing.tool)
    for call in rest:
        if call["outcome"] != "ok":
            continue
        if call["tool"] == firing.tool:
            if own is None or not same_arguments(call, own):
                continue  # the same tool asked about something else says nothing about this value
            found, value = resolve(call.get("result"), path) if isinstance(path, list) else (False, None)
            if same_value(value, right) if found else supplies([right], call.get("result")):
                return "verify", call
        elif call["tool"] in sibs and supplies([right], call.get("result")):
            return "cross_check", call
    return None

"""The hazard kinds on an AgentDojo suite's tools, and where each can act: what a kind needs is read from the facts
table (facts/SUITE.yaml) and from the task's plan (plan.py), and a kind that cannot act on a tool says why, which the
report's "Hazard kinds left out" lists.

- transient_error, latency: every golden-path tool, writes too (the failure comes before the tool runs, so nothing
  happened: retry, after a check for a write);
- invocation_error, spec_drift: golden-path tools with an argument the plan passes (refused before it runs);
- permanent_error: tools the facts table gives a fallback; conflict: tools it gives an independent source;
- output_drift: tools whose result the plan reads (a change of form matters only to a reader);
- silent_wrong_value: reads whose value, served wrong, changes AgentDojo's verdict (found by running the plan,
  wrong_values.py);
- pagination: lists (facts: `pages`) the plan reads past the first page;
- lost_response: golden-path writes a repeat does twice (facts: `retry_safe: false`) with a read that shows them
  (`checked_by`).
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.agentdojo.injection import Injection
from mcp_hazard.hazards.base import CallContext, Effect, Hazard, golden_tools
from mcp_hazard.hazards.latency import Latency
from mcp_hazard.hazards.lost_response import LostResponse
from mcp_hazard.hazards.output import DEFAULT_MODES, OutputMode, alias_keys
from mcp_hazard.hazards.rate_limit import RateLimit
from mcp_hazard.hazards.silent import SilentWrongValue, resolve
from mcp_hazard.hazards.transient import TransientError
from mcp_hazard.proxy.kinds import (
    ProxyConflict,
    ProxyInvocationError,
    ProxyOutputDrift,
    ProxyPagination,
    ProxyPermanentError,
    ProxySpecDrift,
)
from mcp_hazard.proxy.result_values import split_path
from mcp_hazard.proxy.tools import ProxyToolSpec, noted
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.stable import choose, draw

AGENTDOJO_KINDS: dict[str, type[Hazard]] = {}


def _register(cls: type[Hazard]) -> type[Hazard]:
    AGENTDOJO_KINDS[cls.kind] = cls
    return cls


def facts_of(scenario: Scenario) -> str:
    return f"the facts table (mcp_hazard/agentdojo/facts/{scenario.id}.yaml)"


def read_tools(task: Task) -> list[str]:
    """Golden-path tools whose results the plan reads (a later argument or the answer is a template over them)."""
    from mcp_hazard.agentdojo.plan import reads

    read = reads(task.golden_path)
    return [t for t in golden_tools(task) if any(s.tool == t and s.id in read for s in task.golden_path.steps)]


_register(TransientError)
_register(Latency)
_register(RateLimit)  # refused before the function runs: a write is as safe to retry as a read
_register(ProxyInvocationError)
_register(ProxySpecDrift)
_register(Injection)


@_register
class AgentDojoLostResponse(LostResponse):
    """Only on writes a repeat would do twice (facts: retry_safe false): repeating one that sets values is harmless,
    so a lost reply of it tests nothing."""

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return [t for t in super().applicable_tools(scenario, task) if _why_not(scenario, t) is None]

    @classmethod
    def unfit(cls, scenario: Scenario, task: Task) -> str:
        return (f"needs a golden-path write a repeat does twice, with a read that shows it and takes only the "
                f"write's own arguments ({facts_of(scenario)})")  # fmt: skip

    def usable(self, tool: str) -> str | None:
        return super().usable(tool) or _why_not(self.scenario, tool)


def _why_not(scenario: Scenario, tool: str) -> str | None:
    """Why a lost reply of `tool` cannot be recovered from what MCP shows, or None. A write a repeat does no more
    than once (retry_safe) loses nothing; and the agent must find the check from the listing alone, so some read in
    `checked_by` must be callable with the write's own arguments (by name), as read_channel_messages(channel) is for
    send_channel_message(channel, body), and read_inbox(user) is not for send_direct_message(recipient, body)."""
    spec = noted(scenario.tool(tool))
    if spec is None:
        return None
    if spec.retry_safe:
        return f"a repeat of {tool!r} does nothing more (retry_safe in {facts_of(scenario)}): nothing to lose"
    given = set((spec.input_schema.get("properties") or {}).keys())
    for name in spec.checked_by:
        check = scenario.tool(name)
        if check is not None and set(check.input_schema.get("required") or []) <= given:
            return None
    return f"no read in {tool!r}'s checked_by can be called with {tool!r}'s own arguments, to check it went through"


@_register
class AgentDojoPermanentError(ProxyPermanentError):
    @classmethod
    def problem(cls, spec: ProxyToolSpec) -> str | None:
        if spec.fallback_tools:
            return None
        return f"no other tool of the suite answers {spec.name!r}'s calls with the same values (no fallback)"


@_register
class AgentDojoConflict(ProxyConflict):
    @classmethod
    def problem(cls, spec: ProxyToolSpec) -> str | None:
        if spec.cross_check:
            return None
        return f"no other tool of the suite serves {spec.name!r}'s values independently (no source to cross-check)"


class _PlanReads:
    """A kind that acts only on tools whose results the plan reads."""

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return read_tools(task)

    @classmethod
    def unfit(cls, scenario: Scenario, task: Task) -> str:
        return "the plan (AgentDojo's ground truth) reads no value of a golden-path tool's result"

    def usable(self, tool: str) -> str | None:
        if tool in read_tools(self.task):  # type: ignore[attr-defined]
            return None
        return f"the plan reads no value of {tool!r}'s result, so a change of its form could not change what it does"


@_register
class AgentDojoOutputDrift(_PlanReads, ProxyOutputDrift):
    """Two forms are drawn again where they could not act as the kind means: `alias` on a result whose field names
    it leaves as they are (a list of names, a mapping keyed by hotel names: the same JSON, nothing to normalise, so
    nothing bites), and `label_value` on a result with text of several lines (an email's body, a file's content:
    its lines read as labels of their own, so no reader could tell the values back)."""

    _result: Any = None

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        self._result = outcome.result
        return super().after(call, outcome, fire)

    def mode_for(self, tool: str, seed: int) -> OutputMode:
        mode = super().mode_for(tool, seed)
        if self.params.mode is not None or _form_fits(mode, self._result):  # type: ignore[attr-defined]
            return mode
        fitting = tuple(m for m in DEFAULT_MODES if _form_fits(m, self._result))
        return choose(fitting, seed, self.scenario.id, self.task.id, tool, self.salt, "fits") if fitting else mode


def _form_fits(mode: str, result: Any) -> bool:
    if mode == "alias":
        return alias_keys(result) != result
    if mode == "label_value":
        return not _multiline(result)
    return True


def _multiline(value: Any) -> bool:
    if isinstance(value, str):
        return "\n" in value.strip()
    if isinstance(value, dict):
        return any(_multiline(item) for item in value.values())
    if isinstance(value, list):
        return any(_multiline(item) for item in value)
    return False


def _at_least(key: str | int, size: int) -> bool:
    return isinstance(key, int) and key >= size


@_register
class AgentDojoPagination(ProxyPagination):
    """A list the plan reads past its first page; a result that is the list itself is served as `{"items": [...],
    "page", "total_pages", "next_page"}`."""

    @classmethod
    def _pageable(cls, scenario: Scenario, task: Task, size: int = 1) -> dict[str, str]:
        """{tool: why not} for each golden-path tool, '' where it can act."""
        from mcp_hazard.agentdojo.plan import reads

        read = reads(task.golden_path)
        out: dict[str, str] = {}
        for step in task.golden_path.steps:
            spec = noted(scenario.tool(step.tool))
            if spec is None or out.get(step.tool) == "":
                continue
            if spec.pages is None:
                out[step.tool] = f"{step.tool!r} returns no list to page"
                continue
            prefix = split_path(spec.pages)
            later = [p for p in read.get(step.id, []) if list(p[: len(prefix)]) == prefix and len(p) > len(prefix)
                     and _at_least(p[len(prefix)], size)]  # fmt: skip
            out[step.tool] = "" if later else f"the plan reads nothing of {step.tool!r}'s list past its first page"
        return out

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return [tool for tool, why in cls._pageable(scenario, task).items() if not why]

    @classmethod
    def unfit(cls, scenario: Scenario, task: Task) -> str:
        reasons = [why for why in cls._pageable(scenario, task).values() if why.startswith("the plan reads")]
        return reasons[0] if reasons else "no golden-path tool returns a list (facts: pages)"

    def usable(self, tool: str) -> str | None:
        size = self.params.page_size  # type: ignore[attr-defined]
        return self._pageable(self.scenario, self.task, size).get(tool) or None

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        effect = super().after(call, outcome, fire)
        if effect is None or isinstance(effect.result, dict) or not isinstance(outcome.result, list):
            return effect
        spec = noted(call.tool)
        if spec is None or spec.pages is None or split_path(spec.pages):
            return effect
        size = self.params.page_size  # type: ignore[attr-defined]
        page, total = effect.change["page"], effect.change["total_pages"]
        items = outcome.result[(page - 1) * size : page * size]
        effect.result = {"items": items, "page": page, "total_pages": total, "next_page": page + 1 if page < total
                         else None}  # fmt: skip
        return effect


@_register
class AgentDojoSilentWrongValue(SilentWrongValue):
    """The reading of a golden step's call that the plan uses (the first, unless the plan itself repeats the call)
    serves one value the plan reads wrong, chosen among those that change AgentDojo's verdict (wrong_values.py); a
    repeat after it reads the right value, and so do the other readings of that result."""

    needs = "a value the plan reads that, served wrong, changes AgentDojo's verdict"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wronged: set[str] = set()  # digests of the true results served wrong once

    @classmethod
    def _reads(cls, scenario: Scenario, task: Task) -> list[Any]:
        return list(getattr(scenario, "value_reads", {}).get(task.id, []))

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        steps = {entry.step for entry in cls._reads(scenario, task)}
        return [t for t in golden_tools(task) if any(task.golden_path.steps[i].tool == t for i in steps)]

    def usable(self, tool: str) -> str | None:
        if tool in self.applicable_tools(self.scenario, self.task):
            return None
        return f"no value of {tool!r} that the plan reads, served wrong, changes AgentDojo's verdict"

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        from mcp_hazard.agentdojo.wrong_values import digest

        if not fire or not outcome.ok:
            return None
        # A repeat of a call that already succeeded reads the right value (the recovery), except the repeat the plan
        # itself makes and reads (ValueReads.repeat); once a result was served wrong, every later reading is right.
        before = sum(1 for r in call.history
                     if r.tool == call.tool.name and r.outcome == "ok" and r.arguments == call.sent)  # fmt: skip
        steps = self.task.golden_path.steps
        truth = digest(outcome.result)
        if truth in self.wronged:
            return None
        entry = next((e for e in self._reads(self.scenario, self.task) if e.step not in self.served
                      and steps[e.step].tool == call.tool.name and e.result == truth and e.repeat == before),
                     None)  # fmt: skip
        if entry is None:
            return None  # not a golden step's true result, or a repeat: left alone
        self.wronged.add(truth)
        keys = (call.seed, self.scenario.id, self.task.id, call.tool.name, call.slot, self.salt)
        value = min(entry.values, key=lambda v: draw(*keys, "field", *v.path))
        new = min(value.wrong, key=lambda w: draw(*keys, "value", str(w)))
        from mcp_hazard.hazards.silent import replaced

        result = replaced(outcome.result, tuple(value.path), new)
        self.served[entry.step] = result
        original = resolve(outcome.result, value.path)[1]
        return Effect(change={"path": list(value.path), "original": original, "served": new}, result=result,
                      replace_result=True)  # fmt: skip

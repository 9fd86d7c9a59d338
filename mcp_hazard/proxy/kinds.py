"""The hazard kinds in front of a real server: the same kinds, parameters and schedules, known by the proxy file's
notes instead of a golden path that could be run offline.

Each kind says which tools it can act on, and why not for the others: a retry must be safe (transient_error,
latency), a fallback must exist (permanent_error), an independent source (conflict), the fields a task reads
(silent_wrong_value), a list to page (pagination), an argument to change (invocation_error, spec_drift). Kinds that
act on results work on the result's value (proxy/result_values.py): structured content, JSON text, or plain text.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, Rejection, ToolView
from mcp_hazard.hazards.conflict import FRESH_AS_OF, STALE_AS_OF, Conflict, perturb
from mcp_hazard.hazards.drift import SpecDrift
from mcp_hazard.hazards.invocation import InvocationError
from mcp_hazard.hazards.latency import Latency
from mcp_hazard.hazards.lost_response import LostResponse
from mcp_hazard.hazards.output import EXPLANATION, OutputDrift
from mcp_hazard.hazards.output import STALE_AS_OF as CACHE_AS_OF
from mcp_hazard.hazards.pagination import Pagination
from mcp_hazard.hazards.permanent import PermanentError
from mcp_hazard.hazards.rate_limit import RateLimit
from mcp_hazard.hazards.silent import SilentWrongValue, same_value, wrong_values
from mcp_hazard.hazards.transient import TransientError
from mcp_hazard.json_text import indented
from mcp_hazard.proxy.result_values import get_path, move_numbers, numbers_in_text, set_path, split_path
from mcp_hazard.proxy.tools import ProxyToolSpec, noted
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec
from mcp_hazard.stable import choose, draw

PROXY_KINDS: dict[str, type[Hazard]] = {}


def _register(cls: type[Hazard]) -> type[Hazard]:
    PROXY_KINDS[cls.kind] = cls
    return cls


def _served(scenario: Scenario, task: Task) -> list[ProxyToolSpec]:
    """The tools a kind may pick by default: the golden path's, when the task has one (so the hazard bites, as with a
    scenario's tools), else every tool served."""
    served = [spec for spec in map(noted, scenario.task_tools(task)) if spec is not None]
    golden = {step.tool for step in task.golden_path.steps}
    return [spec for spec in served if spec.name in golden] if golden else served


class _Noted:
    """Which tools a kind can act on, from the notes: `problem` says why not (None: it can)."""

    @classmethod
    def problem(cls, spec: ProxyToolSpec) -> str | None:
        return None

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return [spec.name for spec in _served(scenario, task) if cls.problem(spec) is None]

    @classmethod
    def unfit(cls, scenario: Scenario, task: Task) -> str:
        """What the notes lack, for the first tool the kind could have taken (it says what to add to the file)."""
        problems = [problem for spec in _served(scenario, task) if (problem := cls.problem(spec))]
        return problems[0] if problems else super().unfit(scenario, task)  # type: ignore[misc]

    def usable(self, tool: str) -> str | None:
        spec = noted(self.scenario.tool(tool))  # type: ignore[attr-defined]
        return f"no tool {tool!r}" if spec is None else self.problem(spec)


def _not_retry_safe(spec: ProxyToolSpec) -> str | None:
    if spec.retry_safe:
        return None
    return (
        f"{spec.name!r} may have side effects (its annotations say neither readOnlyHint nor idempotentHint, and the "
        "proxy file does not say retry_safe: true), so a retry, the recovery path, could repeat them"
    )


@_register
class ProxyTransientError(_Noted, TransientError):
    problem = staticmethod(_not_retry_safe)


@_register
class ProxyLatency(_Noted, Latency):
    problem = staticmethod(_not_retry_safe)


@_register
class ProxyRateLimit(_Noted, RateLimit):
    """Refused before the call reaches the server: nothing runs, so any tool can take it, a write too."""


_register(LostResponse)  # acts on no proxied tool: a proxy file declares no write (effect) nor check, so it says why


@_register
class ProxyPermanentError(_Noted, PermanentError):
    @classmethod
    def problem(cls, spec: ProxyToolSpec) -> str | None:
        if spec.fallback_tools:
            return None
        return (
            f"the proxy file names no fallback for {spec.name!r} (tools.{spec.name}.fallbacks), so no recovery exists"
        )

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        if not fire:
            return None
        spec = noted(call.tool)
        fallbacks = spec.fallback_tools if spec is not None else []
        return Effect(
            change={"error": "decommissioned", "fallbacks": fallbacks},
            rejection=Rejection(
                "Error 503: this service is no longer available.",
                "This failure is permanent; use another tool that serves the same data: " + ", ".join(fallbacks) + ".",
            ),
        )


def _changeable(cls: type[Hazard], scenario: Scenario, task: Task) -> list[str]:
    """Tools with an argument the kind can change (its own `usable` says which), for its default parameters."""
    probe = cls(HazardSpec(kind=cls.kind), cls.Params(), 0, scenario, task)
    return [spec.name for spec in _served(scenario, task) if probe.usable(spec.name) is None]


def _in_use(hazard: Hazard, tool: str) -> ToolSpec | None:
    """The tool with only the arguments a call of the task passes: those of its golden steps, else the required
    ones (an optional argument no call uses could change without anyone noticing)."""
    spec = hazard.scenario.tool(tool)
    if spec is None:
        return None
    used = {name for step in hazard.task.golden_path.steps if step.tool == tool for name in step.arguments}
    if not used:
        used = {name for name in spec.input_schema.get("required", []) if isinstance(name, str)}
    properties = spec.input_schema.get("properties")
    if not isinstance(properties, dict):
        return spec
    narrowed = {**spec.input_schema, "properties": {k: v for k, v in properties.items() if k in used}}
    return spec.model_copy(update={"input_schema": narrowed})


class _InUse:
    """Interface changes (invocation errors, drift) on the tools and arguments a task's calls use."""

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        return _changeable(cls, scenario, task)  # type: ignore[arg-type]

    def changeable(self, tool: str) -> ToolSpec | None:
        return _in_use(self, tool)  # type: ignore[arg-type]


@_register
class ProxyInvocationError(_InUse, InvocationError):
    pass


@_register
class ProxySpecDrift(_InUse, SpecDrift):
    pass


@_register
class ProxyOutputDrift(_Noted, OutputDrift):
    """On a text result only the forms that keep text readable apply: a note after it, or a cache envelope."""

    TEXT_MODES: ClassVar[tuple[str, ...]] = ("explanation", "stale_flag")

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not fire or not outcome.ok or outcome.result is None:
            return None
        if isinstance(outcome.result, dict | list):
            return super().after(call, outcome, fire)
        text = str(outcome.result)
        declared = self.params.mode  # type: ignore[attr-defined]
        mode = declared if declared in self.TEXT_MODES else choose(
            self.TEXT_MODES, call.seed, self.scenario.id, self.task.id, call.tool.name, self.salt
        )  # fmt: skip
        if mode == "explanation":
            served = text.rstrip() + "\n\n" + EXPLANATION
        else:
            envelope = {"data": text, "cache": {"stale": True, "as_of": CACHE_AS_OF, "note": "served from cache"}}
            served = indented(envelope)
        return Effect(
            change={"mode": mode},
            text=served,
            hint="The result's format differs from the tool's documentation; extract the values you need.",
        )


@_register
class ProxyConflict(_Noted, Conflict):
    """The stale tool's numbers move (in the noted fields, else everywhere, text included) and it is stamped as a
    cache; its cross-check sources are stamped as the fresher primary."""

    @classmethod
    def problem(cls, spec: ProxyToolSpec) -> str | None:
        if spec.cross_check:
            return None
        return (f"the proxy file names no independent source for {spec.name!r} (tools.{spec.name}.cross_check or "
                "fallbacks), so a conflict could not be resolved")  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stamped: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}

    def view(self, view: ToolView) -> ToolView:
        """The listed output schema keeps documenting the result, with the freshness stamps added: a real tool's
        schema is often all an agent has to tell which other tool serves the same facts."""
        below = view.output_schema
        if not isinstance(below, dict) or not isinstance(below.get("properties"), dict):
            view.output_schema = None
            return view
        known = self._stamped.get(id(below))
        if known is None or known[0] is not below:
            stamps = {"as_of": {"type": "string"}, "source": {"type": "string"}}
            known = (below, {**below, "properties": {**below["properties"], **stamps}})
            self._stamped[id(below)] = known
        view.output_schema = known[1]
        return view

    def targets(self, tools: list[str]) -> set[str]:
        found = set(tools)
        for tool in tools:
            spec = noted(self.scenario.tool(tool))
            found.update(spec.cross_check if spec is not None else [])
        return found

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not outcome.ok or outcome.result is None:
            return None
        stale = call.tool.name in (self.spec.tools or self.applicable_tools(self.scenario, self.task))
        factor = self.params.factor  # type: ignore[attr-defined]
        if stale and fire:
            moved = _moved(noted(call.tool), outcome.result, factor)
            if moved == outcome.result:
                return None  # no number to move: nothing would disagree
            return Effect(change={"stale": True, "factor": factor}, result=_stamped(moved, STALE_AS_OF, "cache"),
                          replace_result=True,
                          hint="This value comes from a cache and may be out of date; cross-check it with another "
                          "source.")  # fmt: skip
        if not stale:
            return Effect(change={"stale": False}, result=_stamped(outcome.result, FRESH_AS_OF, "primary"),
                          replace_result=True, record=False)  # fmt: skip
        return None


def _moved(spec: ProxyToolSpec | None, value: Any, factor: float) -> Any:
    def move(node: Any) -> Any:
        return move_numbers(node, factor) if isinstance(node, str) else perturb(node, factor)

    if spec is None or not spec.fields:
        if isinstance(value, dict | list):
            return perturb(value, factor)
        return move(value)
    for field in spec.fields:
        path = split_path(field)
        found, node = get_path(value, path)
        if found:
            value = set_path(value, path, move(node))
    return value


def _stamped(value: Any, as_of: str, source: str) -> Any:
    if isinstance(value, dict):
        return {**value, "as_of": as_of, "source": source}
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"{text.rstrip()}\n(as of {as_of}; source: {source})"


@_register
class ProxySilentWrongValue(_Noted, SilentWrongValue):
    """The first reading of each distinct call gets one noted field wrong (a number, date or time inside a text
    field); a repeat of a call that succeeded, or a cross-check source, reads the right value."""

    @classmethod
    def problem(cls, spec: ProxyToolSpec) -> str | None:
        if spec.fields:
            return None
        return (f"the proxy file does not say which fields of {spec.name!r} a task reads (tools.{spec.name}.fields), "
                "so no wrong value could be told to matter")  # fmt: skip

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        spec = noted(call.tool)
        if not fire or not outcome.ok or spec is None or outcome.result is None:
            return None
        if any(r.tool == spec.name and r.outcome == "ok" and r.arguments == call.sent for r in call.history):
            return None  # a repeat of a call that already succeeded reads the right value: that is the recovery
        keys = (call.seed, self.scenario.id, self.task.id, spec.name, call.slot, self.salt)
        for field in sorted(spec.fields, key=lambda f: draw(*keys, "field", f)):
            path = split_path(field)
            found, node = get_path(outcome.result, path)
            if not found or node is None or isinstance(node, bool | dict | list):
                continue
            for new in _wrong(spec, outcome.result, path, node, keys):
                result = set_path(outcome.result, path, new)
                if _bites(self.task, call, result):
                    return Effect(change={"path": list(path), "original": node, "served": new}, result=result,
                                  replace_result=True)  # fmt: skip
        return None


def _wrong(spec: ProxyToolSpec, result: Any, path: list[str | int], node: Any, keys: tuple[Any, ...]) -> list[Any]:
    """Wrong values of the same type for `node`, each differing from it; in a text, one of its numbers changed."""
    if isinstance(node, str) and numbers_in_text(node):
        out = []
        for start, end, token in sorted(numbers_in_text(node), key=lambda t: draw(*keys, "token", t[0])):
            number: Any = float(token) if "." in token else int(token)
            for option in wrong_values(spec, result, ("value",), number, *keys, start):
                shown = f"{option:.{len(token.split('.')[1])}f}" if "." in token else str(option)
                if len(token) > 1 and token.startswith("0") and shown.isdigit():
                    shown = shown.zfill(len(token))  # 09 stays two digits
                if shown != token:
                    out.append(node[:start] + shown + node[end:])
        return out
    return [o for o in wrong_values(spec, result, tuple(path), node, *keys) if not same_value(o, node)]


def _bites(task: Task, call: CallContext, result: Any) -> bool:
    """Whether serving `result` changes the task's answer. Known only for a golden step of this call whose answer
    depends on that step alone; otherwise any change of a noted field is taken to matter."""
    from mcp_hazard.scenario.answers import answer_matches
    from mcp_hazard.scenario.expressions import ExpressionError, render, template_expressions

    if task.answer is None:
        return True
    for step in task.golden_path.steps:
        if step.tool != call.tool.name or template_expressions(step.arguments) or step.arguments != call.sent:
            continue
        try:
            answer = render(task.golden_path.answer, {step.id: result})
        except ExpressionError:
            return True
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return not answer_matches(task.answer, text)
    return True


@_register
class ProxyPagination(_Noted, Pagination):
    """Splits the noted list (or, for a text, its lines) into pages."""

    @classmethod
    def problem(cls, spec: ProxyToolSpec) -> str | None:
        if spec.pages is not None:
            return None
        return f"the proxy file does not say which list of {spec.name!r} to page (tools.{spec.name}.pages)"

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        spec = noted(call.tool)
        if not fire or not outcome.ok or spec is None or spec.pages is None:
            return None
        size = self.params.page_size  # type: ignore[attr-defined]
        path = split_path(spec.pages)
        found, node = get_path(outcome.result, path)
        lines = isinstance(node, str)
        items = node.splitlines() if isinstance(node, str) else node
        if not found or not isinstance(items, list) or len(items) <= size:
            return None
        total = (len(items) + size - 1) // size
        page = call.sent.get("page", 1)
        page = page if isinstance(page, int) and not isinstance(page, bool) and page >= 1 else 1
        part = items[(page - 1) * size : page * size]
        result = set_path(outcome.result, path, "\n".join(part) if lines else part)
        marker = {"page": page, "total_pages": total, "next_page": page + 1 if page < total else None}
        if isinstance(result, dict):
            result = {**result, **marker}
        else:
            shown = "; ".join(f"{k}: {v}" for k, v in marker.items())
            result = f"{result}\n({shown})"
        return Effect(
            change={"list": spec.pages, "page": page, "total_pages": total},
            result=result,
            replace_result=True,
            hint="Only part of the list is shown: request the next pages with the 'page' argument."
            if page < total else None,
        )  # fmt: skip


assert set(PROXY_KINDS) == {
    "transient_error", "latency", "permanent_error", "invocation_error", "spec_drift", "output_drift", "conflict",
    "silent_wrong_value", "pagination", "lost_response", "rate_limit",
}  # fmt: skip

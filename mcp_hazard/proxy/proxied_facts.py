"""What the hazard kinds know of a real server's tools: the proxy file's notes (proxy/config.py) and the tools'
annotations, instead of a golden path that could be run offline (hazards/tool_facts.py).

A kind acts where the notes answer what it asks, and says why not for the other tools, naming the note to add: a
retry must be safe (transient_error, latency: `retry_safe`, or the annotations), a fallback must exist
(permanent_error: `fallbacks`), an independent source (conflict: `cross_check`), the fields a task reads
(silent_wrong_value: `fields`), a list to page (pagination: `pages`); an interface change acts on the arguments a
task's calls pass. Results are a real server's: structured content, JSON text, or plain text
(proxy/result_values.py), so stamps, moved numbers, pages and wrong values work on text too.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_hazard.hazards.base import CallContext
from mcp_hazard.hazards.capabilities import usable
from mcp_hazard.hazards.tool_facts import FRESH_AS_OF, STALE_AS_OF, Paged, Reading, ScenarioFacts, perturb
from mcp_hazard.hazards.wrong_values import same_value, wrong_values
from mcp_hazard.proxy.result_values import get_path, move_numbers, numbers_in_text, set_path, split_path
from mcp_hazard.proxy.tools import ProxyToolSpec, noted
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import Task, ToolSpec
from mcp_hazard.stable import draw


class ProxyFacts(ScenarioFacts):
    """A proxied server's answers, from the proxy file's notes on each tool (`ProxyToolSpec`)."""

    source = "a proxy file"
    answers: frozenset[str] = frozenset()  # no golden path runs offline: the server is real

    def served(self, task: Task) -> list[ProxyToolSpec]:
        """The tools a kind may pick by default: the golden path's, when the task has one (so the hazard bites, as
        with a scenario's tools), else every tool served."""
        served = [spec for spec in map(noted, self.scenario.task_tools(task)) if spec is not None]
        golden = {step.tool for step in task.golden_path.steps}
        return [spec for spec in served if spec.name in golden] if golden else served

    def _spec(self, tool: str) -> ProxyToolSpec | None:
        return noted(self.scenario.tool(tool))

    def candidates(self, task: Task) -> list[str]:
        return [spec.name for spec in self.served(task)]

    def unfit(self, kind: type, task: Task) -> str | None:
        """The note missing for the first tool the kind could have taken: it says what to add to the file."""
        why_not = getattr(kind, "why_not", None)
        if why_not is None:
            return None
        return next((problem for spec in self.served(task) if (problem := why_not(self, task, spec.name))), None)

    def retry_problem(self, task: Task, tool: str) -> str | None:
        spec = self._spec(tool)
        if spec is None or spec.retry_safe:
            return None
        return (
            f"{spec.name!r} may have side effects (its annotations say neither readOnlyHint nor idempotentHint, and "
            "the proxy file does not say retry_safe: true), so a retry, the recovery path, could repeat them"
        )

    def fallbacks(self, task: Task, tool: str) -> list[str]:
        spec = self._spec(tool)
        return list(spec.fallback_tools) if spec is not None else []

    def fallback_problem(self, task: Task, tool: str) -> str | None:
        if self.fallbacks(task, tool):
            return None
        return f"the proxy file names no fallback for {tool!r} (tools.{tool}.fallbacks), so no recovery exists"

    def cross_checks(self, task: Task, tool: str) -> list[str]:
        spec = self._spec(tool)
        return list(spec.cross_check) if spec is not None else []

    def cross_check_problem(self, task: Task, tool: str) -> str | None:
        if self.cross_checks(task, tool):
            return None
        return (f"the proxy file names no independent source for {tool!r} (tools.{tool}.cross_check or "
                "fallbacks), so a conflict could not be resolved")  # fmt: skip

    def stale(self, tool: ToolSpec, value: Any, factor: float) -> Any | None:
        """The noted fields' numbers moved (else every number, text included), stamped as a cache."""
        if value is None:
            return None
        moved = _moved(noted(tool), value, factor)
        return None if moved == value else _stamped(moved, STALE_AS_OF, "cache")

    def fresh(self, tool: ToolSpec, value: Any) -> Any | None:
        return None if value is None else _stamped(value, FRESH_AS_OF, "primary")

    def stamped_schema(self, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        """The listed output schema keeps documenting the result, with the freshness stamps added: a real tool's
        schema is often all an agent has to tell which other tool serves the same facts."""
        if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
            return None
        return {**schema, "properties": {**schema["properties"], "as_of": {"type": "string"},
                                         "source": {"type": "string"}}}  # fmt: skip

    def result_form(self, value: Any) -> str:
        if isinstance(value, dict | list):
            return "json"
        return "none" if value is None else "text"

    def wrong_value_problem(self, task: Task, tool: str) -> str | None:
        spec = self._spec(tool)
        if spec is None or spec.fields:
            return None
        return (f"the proxy file does not say which fields of {tool!r} a task reads (tools.{tool}.fields), "
                "so no wrong value could be told to matter")  # fmt: skip

    def wrong_reading(self, hazard: Any, call: Any, result: Any) -> Reading | None:
        """The first reading of each distinct call gets one noted field wrong (a number, date or time inside a text
        field); a repeat of a call that succeeded, or a cross-check source, reads the right value."""
        spec = noted(call.tool)
        if spec is None or result is None:
            return None
        if any(r.tool == spec.name and r.outcome == "ok" and r.arguments == call.sent for r in call.history):
            return None  # a repeat of a call that already succeeded reads the right value: that is the recovery
        keys = (call.seed, self.scenario.id, hazard.task.id, spec.name, call.slot, hazard.salt)
        for field in sorted(spec.fields, key=lambda f: draw(*keys, "field", f)):
            path = split_path(field)
            found, node = get_path(result, path)
            if not found or node is None or isinstance(node, bool | dict | list):
                continue
            for new in _wrong(spec, result, path, node, keys):
                served = set_path(result, path, new)
                if _bites(hazard.task, call, served):
                    return tuple(path), node, new, served
        return None

    def page_problem(self, task: Task, tool: str, size: int | None) -> str | None:
        spec = self._spec(tool)
        if spec is None or spec.pages is not None:
            return None
        return f"the proxy file does not say which list of {tool!r} to page (tools.{tool}.pages)"

    def paged(self, tool: ToolSpec, result: Any, page: Any, size: int) -> Paged | None:
        """The noted list (or, for a text, its lines) split into pages; the marker after a text."""
        spec = noted(tool)
        if spec is None or spec.pages is None:
            return None
        path = split_path(spec.pages)
        found, node = get_path(result, path)
        lines = isinstance(node, str)
        items = node.splitlines() if isinstance(node, str) else node
        if not found or not isinstance(items, list) or len(items) <= size:
            return None
        total = (len(items) + size - 1) // size
        page = page if isinstance(page, int) and not isinstance(page, bool) and page >= 1 else 1
        part = items[(page - 1) * size : page * size]
        served = set_path(result, path, "\n".join(part) if lines else part)
        marker = {"page": page, "total_pages": total, "next_page": page + 1 if page < total else None}
        if isinstance(served, dict):
            served = {**served, **marker}
        else:
            served = f"{served}\n({'; '.join(f'{k}: {v}' for k, v in marker.items())})"
        return served, spec.pages, total

    def changeable_tools(self, kind: type, task: Task) -> list[str]:
        """Tools with an argument the kind can change (its own `usable` says which), for its default parameters."""
        probe = kind(HazardSpec(kind=kind.kind), kind.Params(), 0, self.scenario, task)  # type: ignore[attr-defined]
        return [spec.name for spec in self.served(task) if usable(probe, spec.name) is None]

    def changeable(self, task: Task, tool: str) -> ToolSpec | None:
        """The tool with only the arguments a call of the task passes: those of its golden steps, else the required
        ones (an optional argument no call uses could change without anyone noticing)."""
        spec = self.scenario.tool(tool)
        if spec is None:
            return None
        used = {name for step in task.golden_path.steps if step.tool == tool for name in step.arguments}
        if not used:
            used = {name for name in spec.input_schema.get("required", []) if isinstance(name, str)}
        properties = spec.input_schema.get("properties")
        if not isinstance(properties, dict):
            return spec
        narrowed = {**spec.input_schema, "properties": {k: v for k, v in properties.items() if k in used}}
        return spec.model_copy(update={"input_schema": narrowed})


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

"""What a hazard kind asks of the tools and the task, and the scenario's answers.

A kind is one class wherever it acts: in a scenario, in front of a real server (proxy/), on an AgentDojo suite
(agentdojo/). What differs between those is not what the kind does but what is known about the tools: a scenario
runs its golden path offline and declares `serves:`, `effect:` and `checked_by:`; a proxy file notes which tools are
safe to retry, which fields a task reads, which list to page; an AgentDojo suite has its facts table and its plan. So
a kind asks a `ToolFacts` provider (`facts_of(scenario)`): is a retry safe, which tools to fall back to or cross-check
with, whether a tool is a write and which read checks it, which list can be paged, how to stamp or move a value, which
value to serve wrong, and, for each, why not: one line, which for a proxy file says what to add to it.

`ScenarioFacts` is the scenario's provider, and the base of the two others: a provider answers only what it knows
differently. A kind lists the questions it asks beyond the protocol's core (`Hazard.asks`); a provider that cannot
answer one refuses the kind in one line (`refusal`), so a kind from another package works in front of a real server
when its questions are answered there, and is told why not otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mcp_hazard.hazards import wrong_values
from mcp_hazard.hazards.needed_values import needs_later_pages, second_source_problem, supplying_siblings
from mcp_hazard.hazards.siblings import fallbacks_for, golden_tools
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec

STALE_AS_OF = "2025-12-01"
FRESH_AS_OF = "2026-11-20"

Reading = tuple[tuple[str | int, ...], Any, Any, Any]  # (path, right value, served value, served result)
Paged = tuple[Any, Any, int]  # (the page served, which list was paged, how many pages)


class ToolFacts(Protocol):
    """What the kinds ask of the tools of one scenario (one provider per scenario object)."""

    scenario: Scenario
    own_kinds: Mapping[str, type]  # kinds that only this kind of environment has (AgentDojo's injection)

    def refusal(self, kind: type) -> str | None:
        """None when every question `kind` asks (`kind.asks`) has an answer here; else why not, in one line."""
        ...

    def candidates(self, task: Task) -> list[str]:
        """The tools a kind may pick by default: those a call of the task makes, so the hazard bites."""
        ...

    def unfit(self, kind: type, task: Task) -> str | None:
        """Why `kind` can act on no tool of `task`, when this provider says it better than the kind's `needs`."""
        ...

    def retry_problem(self, task: Task, tool: str) -> str | None:
        """Why a retry of `tool`, the recovery of a failure before it runs, may be unsafe; None: it is safe."""
        ...

    def fallbacks(self, task: Task, tool: str) -> list[str]:
        """Tools that answer `tool`'s calls with the same values, to fall back to."""
        ...

    def fallback_problem(self, task: Task, tool: str) -> str | None: ...

    def cross_checks(self, task: Task, tool: str) -> list[str]:
        """Independent tools serving `tool`'s values, to cross-check a stale one against."""
        ...

    def cross_check_problem(self, task: Task, tool: str) -> str | None: ...

    def stale(self, tool: ToolSpec, value: Any, factor: float) -> Any | None:
        """`value` with its numbers moved by `factor` and stamped as an old cache's; None: nothing to move."""
        ...

    def fresh(self, tool: ToolSpec, value: Any) -> Any | None:
        """`value` stamped as the fresh primary source's; None: it cannot carry a stamp."""
        ...

    def stamped_schema(self, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        """The output schema listed while results carry freshness stamps (None: listed without one)."""
        ...

    def checked_write_problem(self, task: Task, tool: str) -> str | None:
        """Why a lost reply of `tool` could not be recovered by checking the state: not a write, or no read shows
        it; None: a write a served read checks."""
        ...

    def checks(self, tool: ToolSpec) -> list[str]:
        """The read tools that show whether a call of the write `tool` went through."""
        ...

    def read_problem(self, task: Task, tool: str) -> str | None:
        """Why a change of the form of `tool`'s result would go unnoticed (the task reads none of it)."""
        ...

    def result_form(self, value: Any) -> str:
        """How a result is shown: `json` (a value), `text` (a real server's plain text), `none` (nothing)."""
        ...

    def form_fits(self, mode: str, value: Any) -> bool:
        """Whether output drift's `mode` changes the form of `value` as the mode means to."""
        ...

    def wrong_value_problem(self, task: Task, tool: str) -> str | None:
        """Why no value of `tool` a task reads can be served wrong so that it matters."""
        ...

    def wrong_reading(self, hazard: Any, call: Any, result: Any) -> Reading | None:
        """Which value of this call's ok `result` to serve wrong, or None (a repeat, a detour, nothing that bites)."""
        ...

    def page_problem(self, task: Task, tool: str, size: int | None) -> str | None:
        """Why `tool`'s result has no list a task reads past its first page (`size` None: the default size, when
        choosing tools; else the hazard's own)."""
        ...

    def paged(self, tool: ToolSpec, result: Any, page: Any, size: int) -> Paged | None:
        """Page `page` (as the agent sent it) of `result`'s list, or None when the list fits on one page."""
        ...

    def changeable_tools(self, kind: type, task: Task) -> list[str]:
        """The tools an interface change may pick by default."""
        ...

    def changeable(self, task: Task, tool: str) -> ToolSpec | None:
        """The tool as an interface change may alter it: the arguments whose change a call would notice."""
        ...


def perturb(value: Any, factor: float) -> Any:
    """Every number of `value` moved by `factor` (an integer by at least 1)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        moved = round(value * factor)
        return moved if moved != value else value + 1
    if isinstance(value, float):
        return round(value * factor, 2)
    if isinstance(value, list):
        return [perturb(item, factor) for item in value]
    if isinstance(value, dict):
        return {k: perturb(v, factor) for k, v in value.items()}
    return value


def _list_key(result: Any, size: int) -> str | None:
    if not isinstance(result, dict):
        return None
    return next((k for k, v in result.items() if isinstance(v, list) and len(v) > size), None)


def checkable_writes(scenario: Scenario, task: Task) -> list[str]:
    """Golden-path writes whose effect a served read tool shows (`effect: write` with `checked_by`)."""
    served = {tool.name for tool in scenario.task_tools(task)}
    found = []
    for name in golden_tools(task):
        spec = scenario.tool(name)
        if spec is not None and spec.effect == "write" and any(other in served for other in spec.checked_by):
            found.append(name)
    return found


class ScenarioFacts:
    """A scenario's answers: its golden path, run offline, says what a task reads; `serves:` which tools stand in
    for each other; `effect:` and `checked_by:` which tools write and which read shows it."""

    own_kinds: Mapping[str, type] = {}
    # Questions beyond the protocol this provider answers: a scenario alone can run its golden path offline.
    answers: frozenset[str] = frozenset({"golden_results"})
    source = "a scenario"

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def refusal(self, kind: type) -> str | None:
        missing = [q for q in getattr(kind, "asks", ()) if q not in self.answers and not hasattr(ToolFacts, q)]
        if not missing:
            return None
        name = getattr(kind, "kind", kind.__name__)
        return f"kind {name!r} asks {', '.join(missing)} of the tools, which {self.source} cannot tell"

    def candidates(self, task: Task) -> list[str]:
        return golden_tools(task)

    def golden_results(self, task: Task) -> list[Any] | None:
        """The true result of each golden step, the golden path run offline; None when it cannot run here."""
        plan = wrong_values.plan_of(self.scenario, task)
        return [result for _id, _arguments, result in plan.steps] if plan is not None else None

    def unfit(self, kind: type, task: Task) -> str | None:
        return None

    def retry_problem(self, task: Task, tool: str) -> str | None:
        return None

    def fallbacks(self, task: Task, tool: str) -> list[str]:
        return supplying_siblings(self.scenario, task, tool) or fallbacks_for(self.scenario, task, tool)

    def fallback_problem(self, task: Task, tool: str) -> str | None:
        return second_source_problem(self.scenario, task, tool, "so no fallback exists")

    def cross_checks(self, task: Task, tool: str) -> list[str]:
        return self.fallbacks(task, tool)

    def cross_check_problem(self, task: Task, tool: str) -> str | None:
        return second_source_problem(self.scenario, task, tool, "so no cross-check")

    def stale(self, tool: ToolSpec, value: Any, factor: float) -> Any | None:
        if not isinstance(value, dict):
            return None
        return {**perturb(value, factor), "as_of": STALE_AS_OF, "source": "cache"}

    def fresh(self, tool: ToolSpec, value: Any) -> Any | None:
        return {**value, "as_of": FRESH_AS_OF, "source": "primary"} if isinstance(value, dict) else None

    def stamped_schema(self, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        return None  # stamped results carry fields the declared schema may not allow

    def checked_write_problem(self, task: Task, tool: str) -> str | None:
        spec = self.scenario.tool(tool)
        if spec is None or spec.effect != "write":
            return f"{tool!r} is not a write (effect: write): a lost reply of a read loses nothing a retry cannot get"
        if tool not in checkable_writes(self.scenario, task):
            return f"no served read tool shows whether a call of {tool!r} went through (checked_by)"
        return None

    def checks(self, tool: ToolSpec) -> list[str]:
        return list(tool.checked_by)

    def read_problem(self, task: Task, tool: str) -> str | None:
        return None

    def result_form(self, value: Any) -> str:
        return "json"

    def form_fits(self, mode: str, value: Any) -> bool:
        return True

    def wrong_value_problem(self, task: Task, tool: str) -> str | None:
        return wrong_values.wrong_value_problem(self.scenario, task, tool)

    def wrong_reading(self, hazard: Any, call: Any, result: Any) -> Reading | None:
        return wrong_values.wrong_reading(hazard, call, result)

    def page_problem(self, task: Task, tool: str, size: int | None) -> str | None:
        if size is not None or needs_later_pages(self.scenario, task, tool, 1):
            return None
        return f"an agent reading only the first page of {tool!r} would still reach the answer"

    def paged(self, tool: ToolSpec, result: Any, page: Any, size: int) -> Paged | None:
        key = _list_key(result, size)
        if key is None:
            return None
        items = result[key]
        total = (len(items) + size - 1) // size
        page = page if isinstance(page, int) and page >= 1 else 1
        served = dict(result)
        served[key] = items[(page - 1) * size : page * size]
        served.update({"page": page, "total_pages": total, "next_page": page + 1 if page < total else None})
        return served, key, total

    def changeable_tools(self, kind: type, task: Task) -> list[str]:
        return self.candidates(task)

    def changeable(self, task: Task, tool: str) -> ToolSpec | None:
        return self.scenario.tool(tool)


def facts_of(scenario: Scenario) -> ToolFacts:
    """The provider that answers for `scenario`'s tools: the one its class names (`Scenario.tool_facts`: a proxied
    server's, a suite's), else the scenario's own."""
    provider = type(scenario).tool_facts or ScenarioFacts
    return provider(scenario)

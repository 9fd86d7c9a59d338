"""What the hazard kinds know of an AgentDojo suite's tools: the facts table (facts/SUITE.yaml) and the task's plan
(plan.py), answered as a proxy file's notes are (hazards/tool_facts.py), and why not where a kind cannot act, which
the report's "Hazard kinds left out" lists.

- transient_error, latency, rate_limit: every golden-path tool, writes too (the failure comes before the tool runs,
  so nothing happened: retry, after a check for a write);
- invocation_error, spec_drift: golden-path tools with an argument the plan passes (refused before it runs);
- permanent_error: tools the facts table gives a fallback; conflict: tools it gives an independent source;
- output_drift: tools whose result the plan reads (a change of form matters only to a reader);
- silent_wrong_value: reads whose value, served wrong, changes AgentDojo's verdict (found by running the plan,
  verdict_values.py);
- pagination: lists (facts: `pages`) the plan reads past the first page;
- lost_response: golden-path writes a repeat does twice (facts: `retry_safe: false`) with a read that shows them
  (`checked_by`);
- injection, the suite's own kind (injection.py): golden-path tools of a task whose ground truth shows the agent an
  injection vector.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_hazard.agentdojo.injection import Injection
from mcp_hazard.hazards.base import golden_tools
from mcp_hazard.hazards.output import alias_keys
from mcp_hazard.hazards.silent import replaced, resolve
from mcp_hazard.hazards.tool_facts import Paged, Reading
from mcp_hazard.proxy.proxied_facts import ProxyFacts
from mcp_hazard.proxy.result_values import split_path
from mcp_hazard.proxy.tools import noted
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec
from mcp_hazard.stable import draw


def facts_table(scenario: Scenario) -> str:
    return f"the facts table (mcp_hazard/agentdojo/facts/{scenario.id}.yaml)"


def read_tools(task: Task) -> list[str]:
    """Golden-path tools whose results the plan reads (a later argument or the answer is a template over them)."""
    from mcp_hazard.agentdojo.plan import reads

    read = reads(task.golden_path)
    return [t for t in golden_tools(task) if any(s.tool == t and s.id in read for s in task.golden_path.steps)]


class SuiteFacts(ProxyFacts):
    """A suite's answers: the facts table's notes as a proxy file's, the plan as the golden path."""

    own_kinds: Mapping[str, type] = {"injection": Injection}
    source = "an AgentDojo suite"

    def candidates(self, task: Task) -> list[str]:
        return golden_tools(task)

    def unfit(self, kind: type, task: Task) -> str | None:
        name = getattr(kind, "kind", None)
        if name == "silent_wrong_value":
            return "needs a value the plan reads that, served wrong, changes AgentDojo's verdict"
        if name == "output_drift":
            return "the plan (AgentDojo's ground truth) reads no value of a golden-path tool's result"
        if name == "lost_response":
            return (f"needs a golden-path write a repeat does twice, with a read that shows it and takes only the "
                    f"write's own arguments ({facts_table(self.scenario)})")  # fmt: skip
        if name == "pagination":
            reasons = [why for why in self._pageable(task).values() if why.startswith("the plan reads")]
            return reasons[0] if reasons else "no golden-path tool returns a list (facts: pages)"
        return super().unfit(kind, task)

    def retry_problem(self, task: Task, tool: str) -> str | None:
        return None  # refused before the function runs: a write is as safe to retry as a read

    def fallback_problem(self, task: Task, tool: str) -> str | None:
        if self.fallbacks(task, tool):
            return None
        return f"no other tool of the suite answers {tool!r}'s calls with the same values (no fallback)"

    def cross_check_problem(self, task: Task, tool: str) -> str | None:
        if self.cross_checks(task, tool):
            return None
        return f"no other tool of the suite serves {tool!r}'s values independently (no source to cross-check)"

    def checked_write_problem(self, task: Task, tool: str) -> str | None:
        """Only writes a repeat would do twice (facts: retry_safe false): repeating one that sets values is harmless,
        so a lost reply of it tests nothing."""
        return super().checked_write_problem(task, tool) or self._unrecoverable(tool)

    def _unrecoverable(self, tool: str) -> str | None:
        """Why a lost reply of `tool` cannot be recovered from what MCP shows, or None. A write a repeat does no more
        than once (retry_safe) loses nothing; and the agent must find the check from the listing alone, so some read
        in `checked_by` must be callable with the write's own arguments (by name), as read_channel_messages(channel)
        is for send_channel_message(channel, body), and read_inbox(user) is not for send_direct_message(recipient,
        body)."""
        spec = noted(self.scenario.tool(tool))
        if spec is None:
            return None
        if spec.retry_safe:
            where = facts_table(self.scenario)
            return f"a repeat of {tool!r} does nothing more (retry_safe in {where}): nothing to lose"
        given = set((spec.input_schema.get("properties") or {}).keys())
        for name in spec.checked_by:
            check = self.scenario.tool(name)
            if check is not None and set(check.input_schema.get("required") or []) <= given:
                return None
        return f"no read in {tool!r}'s checked_by can be called with {tool!r}'s own arguments, to check it went through"

    def read_problem(self, task: Task, tool: str) -> str | None:
        if tool in read_tools(task):
            return None
        return f"the plan reads no value of {tool!r}'s result, so a change of its form could not change what it does"

    def form_fits(self, mode: str, value: Any) -> bool:
        """Two forms cannot act as the kind means: `alias` on a result whose field names it leaves as they are (a
        list of names, a mapping keyed by hotel names: the same JSON, nothing to normalise, so nothing bites), and
        `label_value` on a result with text of several lines (an email's body, a file's content: its lines read as
        labels of their own, so no reader could tell the values back)."""
        if mode == "alias":
            return bool(alias_keys(value) != value)
        if mode == "label_value":
            return not _multiline(value)
        return True

    def _reads(self, task: Task) -> list[Any]:
        return list(getattr(self.scenario, "value_reads", {}).get(task.id, []))

    def wrong_value_problem(self, task: Task, tool: str) -> str | None:
        steps = {entry.step for entry in self._reads(task)}
        if tool in golden_tools(task) and any(task.golden_path.steps[i].tool == tool for i in steps):
            return None
        return f"no value of {tool!r} that the plan reads, served wrong, changes AgentDojo's verdict"

    def wrong_reading(self, hazard: Any, call: Any, result: Any) -> Reading | None:
        """The reading of a golden step's call that the plan uses (the first, unless the plan itself repeats the
        call) serves one value the plan reads wrong, chosen among those that change AgentDojo's verdict
        (verdict_values.py); a repeat after it reads the right value, and so do the other readings of that result."""
        from mcp_hazard.agentdojo.verdict_values import digest

        # A repeat of a call that already succeeded reads the right value (the recovery), except the repeat the plan
        # itself makes and reads (ValueReads.repeat); once a result was served wrong, every later reading is right.
        before = sum(1 for r in call.history
                     if r.tool == call.tool.name and r.outcome == "ok" and r.arguments == call.sent)  # fmt: skip
        task = hazard.task
        steps = task.golden_path.steps
        truth = digest(result)
        if truth in hazard.wronged:
            return None
        entry = next((e for e in self._reads(task) if e.step not in hazard.served
                      and steps[e.step].tool == call.tool.name and e.result == truth and e.repeat == before),
                     None)  # fmt: skip
        if entry is None:
            return None  # not a golden step's true result, or a repeat: left alone
        hazard.wronged.add(truth)
        keys = (call.seed, self.scenario.id, task.id, call.tool.name, call.slot, hazard.salt)
        value = min(entry.values, key=lambda v: draw(*keys, "field", *v.path))
        new = min(value.wrong, key=lambda w: draw(*keys, "value", str(w)))
        served = replaced(result, tuple(value.path), new)
        hazard.served[entry.step] = served
        return tuple(value.path), resolve(result, value.path)[1], new, served

    def _pageable(self, task: Task, size: int = 1) -> dict[str, str]:
        """{tool: why not} for each golden-path tool, '' where it can act: a list the plan reads past its first
        page."""
        from mcp_hazard.agentdojo.plan import reads

        read = reads(task.golden_path)
        out: dict[str, str] = {}
        for step in task.golden_path.steps:
            spec = noted(self.scenario.tool(step.tool))
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

    def page_problem(self, task: Task, tool: str, size: int | None) -> str | None:
        return self._pageable(task, 1 if size is None else size).get(tool) or None

    def paged(self, tool: ToolSpec, result: Any, page: Any, size: int) -> Paged | None:
        """A result that is the list itself is served as `{"items": [...], "page", "total_pages", "next_page"}`."""
        paged = super().paged(tool, result, page, size)
        spec = noted(tool)
        if paged is None or isinstance(paged[0], dict) or not isinstance(result, list) or spec is None:
            return paged
        if spec.pages is None or split_path(spec.pages):
            return paged
        page = page if isinstance(page, int) and not isinstance(page, bool) and page >= 1 else 1
        total = paged[2]
        items = result[(page - 1) * size : page * size]
        wrapped = {"items": items, "page": page, "total_pages": total, "next_page": page + 1 if page < total else None}
        return wrapped, paged[1], total


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

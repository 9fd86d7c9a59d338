"""An episode's trace indexed for scoring: its tool calls (submit_answer aside), its events by type, and the caches
every scoring rule shares (call keys, sibling tools, what the agent had seen by a point of the episode). Also the
one efficiency rule that only compares calls: redundant calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp_hazard.hazards.base import siblings
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scenario.serves import step_stand_ins, tool_stand_ins
from mcp_hazard.scoring.seen import Seen, listing
from mcp_hazard.trace.reader import Trace

# Built once: `json.dumps` with options builds a new JSONEncoder on every call.
KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def call_key(event: dict[str, Any]) -> str:
    return f"{event.get('tool')}|{KEY_ENCODER.encode(event.get('arguments'))}"


def by_type_of(events: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for event in events:
        groups.setdefault(event.get("type"), []).append(event)
    return groups


class EpisodeCalls:
    """One episode's calls and events, read once and shared by the rules that score it."""

    def __init__(
        self, trace: Trace, scenario: Scenario, task: Task, by_type: dict[Any, list[dict[str, Any]]] | None = None
    ) -> None:
        self.trace = trace
        self.scenario = scenario
        self.task = task
        self.by_type = by_type if by_type is not None else by_type_of(trace.events)
        self.calls = [e for e in self.by_type.get("tool_called", ()) if e.get("tool") != "submit_answer"]
        self.events = trace.events
        self.facts = _task_facts(scenario, task)
        self._keys: dict[int, str] = {}  # id(call) -> call_key(call)
        self._seen: dict[int, Seen] = {}  # number of leading calls -> what they showed

    def key(self, call: dict[str, Any]) -> str:
        found = self._keys.get(id(call))
        if found is None:
            found = self._keys[id(call)] = call_key(call)
        return found

    def stand_ins(self, tool: str) -> frozenset[str]:
        """Tools that serve what this task reads from `tool`'s results (scenario/serves.py): a fallback or a
        cross-check of `tool` counts only with one of them."""
        return self.facts.stand_ins(tool)

    def siblings(self, tool: str) -> frozenset[str]:
        return self.facts.siblings(tool)

    def later_calls(self, seq: int) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["seq"] > seq]

    def relisted_between(self, start: int, end: int) -> bool:
        return any(start < e["seq"] < end for e in self.by_type.get("tools_listed", ()))

    def seen(self, before_seq: int) -> Seen:
        """What the agent had been shown before `before_seq`: the prompt, the tool listing, and every earlier call's
        result, text and error (seen.py). Built once per prefix of calls."""
        count = 0
        for call in self.calls:
            if call["seq"] >= before_seq:
                break
            count += 1
        found = self._seen.get(count)
        if found is None:
            found = self._seen[count] = listing(self.scenario, self.task)
            for call in self.calls[:count]:
                found.show_call(call)
        return found

    def keep_seen(self, seen: Seen) -> None:
        """Keep what all the calls showed, built by a rule that walked them (the value taxonomy), so that `seen`
        does not build it again."""
        self._seen[len(self.calls)] = seen

    def steps_missing(self) -> list[str]:
        try:
            done = {c["tool"] for c in self.calls if c["outcome"] in RAN}
        except (KeyError, TypeError):  # a damaged trace (a call without a tool, or an odd one): look call by call
            done = None
        missing = []
        for tool, accepted in self.facts.accepted:
            if done is not None:
                if accepted.isdisjoint(done):
                    missing.append(tool)
            elif not any(c["tool"] in accepted and c["outcome"] in RAN for c in self.calls):
                missing.append(tool)
        return sorted(set(missing))


class _TaskFacts:
    """What the scoring rules ask of a task's scenario, the same for each of its episodes: found once per task (an
    episode asks them again and again, and a tool's stand-ins look through every tool of the scenario)."""

    def __init__(self, scenario: Scenario, task: Task) -> None:
        self.scenario, self.task = scenario, task
        steps = zip(task.golden_path.steps, step_stand_ins(scenario, task), strict=True)
        # Per golden step: its tool, and every tool whose successful call does the step.
        self.accepted = tuple((step.tool, frozenset((step.tool, *others))) for step, others in steps)
        self._stand_ins: dict[str, frozenset[str]] = {}
        self._siblings: dict[str, frozenset[str]] = {}

    def stand_ins(self, tool: str) -> frozenset[str]:
        return self._kept(self._stand_ins, tool, lambda: tool_stand_ins(self.scenario, self.task, tool))

    def siblings(self, tool: str) -> frozenset[str]:
        return self._kept(self._siblings, tool, lambda: siblings(self.scenario, tool))

    @staticmethod
    def _kept(kept: dict[str, frozenset[str]], tool: str, find: Callable[[], list[str]]) -> frozenset[str]:
        """`find()` for `tool`, kept by name. An unhashable name (a damaged trace) names no tool: no tools."""
        try:
            found = kept.get(tool)
        except TypeError:
            return frozenset()
        if found is None:
            found = frozenset(find())
            if len(kept) < _NAMES_LIMIT:  # a damaged trace may name any number of tools
                kept[tool] = found
        return found


_NAMES_LIMIT = 1024  # tool names kept per task
_FACTS: dict[tuple[int, str], _TaskFacts] = {}


def _task_facts(scenario: Scenario, task: Task) -> _TaskFacts:
    """The task's facts, once per scenario object and task. An entry keeps its scenario alive, so the id in the key
    cannot be reused while it lives; dropped whole when full."""
    key = (id(scenario), task.id)
    found = _FACTS.get(key)
    if found is None or found.scenario is not scenario or found.task is not task:
        if len(_FACTS) >= 4096:
            _FACTS.clear()
        found = _FACTS[key] = _TaskFacts(scenario, task)
    return found


RAN = ("ok", "lost")
"""Outcomes of a call that ran to completion: a lost reply (lost_response) was still carried out."""

_PLAIN_TYPES = (str, int, bool, type(None))


def _plain_arguments(arguments: Any) -> tuple[tuple[str, type, Any], ...] | None:
    """Flat arguments as a tuple that is equal for two calls exactly when their sorted-key JSON is equal: each name
    with the type and value (a float by its repr: 1 == 1.0 == True and 0.0 == -0.0 in Python, not in JSON). None for
    anything else (nested values, names that are not text), which is then compared as JSON."""
    if type(arguments) is not dict:
        return None
    items = []
    for name, value in arguments.items():
        kind = type(value)
        if type(name) is not str:
            return None
        if kind is float:
            value = repr(value)
        elif kind not in _PLAIN_TYPES:
            return None
        items.append((name, kind, value))
    items.sort()  # by name: names in a dict are distinct, so types and values are never compared
    return tuple(items)


def redundant_calls(ok_calls: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> int:
    """Successful calls that repeat an earlier one: same tool, same arguments (compared as sorted-key JSON, `key`).
    When every tool name is text without `|` (so keys of different tools differ), only the calls of a tool called
    more than once are compared, and where their arguments are flat, `_plain_arguments` stands in for the JSON,
    which is slower to build."""
    if len(ok_calls) < 2:
        return 0
    tools: list[Any] = [c.get("tool") for c in ok_calls]
    try:
        text = "|" not in "".join(tools)  # every name text (JSON gives no str subclass), none with `|`
    except TypeError:
        text = False
    if text:
        if len(set(tools)) == len(tools):
            return 0  # no tool called twice: no call repeats another
        once: set[Any] = set()
        again: set[Any] = set()
        for tool in tools:
            (again if tool in once else once).add(tool)
        ok_calls = [c for c, tool in zip(ok_calls, tools, strict=True) if tool in again]
        tools = [c["tool"] for c in ok_calls]
        plain = [_plain_arguments(c.get("arguments")) for c in ok_calls]
        if None not in plain:
            return len(plain) - len(set(zip(tools, plain, strict=True)))
    keys = [key(c) for c in ok_calls]
    return len(keys) - len(set(keys))

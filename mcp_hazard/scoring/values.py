"""FuncBenchGen's failure taxonomy of calls (paper 003, "Failure Type Analysis"), for episodes that failed.

Silent failures return an ok outcome with a wrong value, so every call is classified, not only those that returned
an error, by tracking which values the agent had been shown before it made the call: the task prompt, the tool
listing (descriptions and input schemas: enums, examples), and every earlier result, result text and error
message. A successful call that is exactly a golden step's call gets no class; for the others, in order, the first
that applies:

- `non_existent_function`: the tool name is unknown;
- `wrong_argument_count`: fewer arguments than the tool requires, or more than it has;
- `unknown_value`: some argument value was never shown to the agent (a number by value, text as a whole phrase);
- `incorrect_value`: every value was shown, but the call is not the golden one: a golden-path tool called with
  other arguments than its golden step's, or any call that the tool refused with an error.

A call of a tool that is not on the golden path with values the agent had been shown is not a failure by itself
(a detour): its output does harm only when it is fed on, and that later call is the one classified. Calls a hazard
acted on (rejected, delayed, drifted: the trace's `hazards`), faults of the scenario, and calls that match their
golden step get no class. docs/scoring.md ("Value taxonomy") has a worked example.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mcp_hazard.scenario.answers import canonical_text
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scoring.trajectory import GoldenCalls, original_arguments, same_value

CLASSES = ("non_existent_function", "wrong_argument_count", "unknown_value", "incorrect_value")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_SKIPPED = frozenset({"rejected", "cancelled", "fault"})


@dataclass
class _Shown:
    """What the agent had been shown so far: numbers by value, texts whole, and free text for phrases. What calls
    showed is only read when a value has to be looked up (most failed episodes never need it): `pending` holds it."""

    numbers: set[float] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)
    prose: list[str] = field(default_factory=list)
    pending: list[tuple[bool, Any]] = field(default_factory=list)  # (is free text, what was shown), in order

    def show(self, value: Any, text: bool = False) -> None:
        self.pending.append((text, value))

    def add_text(self, text: str) -> str:
        folded, numbers = _folded(text)
        self.prose.append(folded)
        self.numbers.update(numbers)
        return folded

    def add_value(self, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                self.add_value(item)
                if type(key) is str:
                    self.texts.add(_folded(key)[0])
        elif isinstance(value, list):
            for item in value:
                self.add_value(item)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int | float):
            self.numbers.add(float(value))
        else:
            self.texts.add(self.add_text(str(value)))

    def knows(self, value: Any) -> bool:
        if isinstance(value, bool) or value is None:
            return True  # flags and nulls carry no value to remember
        for is_text, shown in self.pending:
            self.add_text(shown) if is_text else self.add_value(shown)
        self.pending.clear()
        if isinstance(value, int | float):
            return float(value) in self.numbers
        text = canonical_text(value).casefold()
        if not text or text in self.texts:
            return True
        pattern = _phrase(text)
        return any(text in part and pattern.search(part) for part in self.prose)

    def copy(self) -> _Shown:
        return _Shown(set(self.numbers), set(self.texts), list(self.prose))


@lru_cache(maxsize=1 << 16)
def _folded(text: str) -> tuple[str, tuple[float, ...]]:
    """Text as the rules compare it (canonical, case-blind) and the numbers in it; texts repeat across episodes."""
    folded = canonical_text(text).casefold()
    digits = any(c.isdigit() for c in folded)
    return folded, tuple(float(n) for n in _NUMBER.findall(folded.replace(",", ""))) if digits else ()


@lru_cache(maxsize=4096)
def _phrase(text: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")


_LISTINGS: dict[tuple[int, str], tuple[Scenario, _Shown]] = {}


def _listing(scenario: Scenario, task: Task) -> _Shown:
    """What every episode of a task is shown before its first call (prompt, tool listing): built once per task."""
    key = (id(scenario), task.id)
    cached = _LISTINGS.get(key)
    if cached is None or cached[0] is not scenario:
        shown = _Shown()
        shown.add_text(task.prompt)
        for tool in scenario.task_tools(task):
            shown.add_text(tool.description)
            shown.add_text(json.dumps(tool.input_schema, ensure_ascii=False))
        if len(_LISTINGS) > 4096:
            _LISTINGS.clear()
        cached = _LISTINGS[key] = (scenario, shown)
    return cached[1].copy()


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _scalars(item)]
    if isinstance(value, list):
        return [s for item in value for s in _scalars(item)]
    return [value]


def _arity(scenario: Scenario, tool: str) -> tuple[int, int] | None:
    spec = scenario.tool(tool)
    if spec is None:
        return None
    props = spec.input_schema.get("properties")
    required = spec.input_schema.get("required")
    return (len(required) if isinstance(required, list) else 0, len(props) if isinstance(props, dict) else 0)


def classify_calls(
    calls: list[dict[str, Any]], scenario: Scenario, task: Task, golden: GoldenCalls
) -> list[tuple[int, str]]:
    """(seq, class) for every classified call, in order (CLASSES)."""
    shown = _listing(scenario, task)
    out: list[tuple[int, str]] = []
    for call in calls:
        found = _classify(call, shown, scenario, golden)
        if found is not None:
            out.append((call["seq"], found))
        if call.get("outcome") == "ok":
            shown.show(call.get("result"))
        for key in ("text", "error"):
            if isinstance(call.get(key), str):
                shown.show(call[key], text=True)
    return out


def _classify(call: dict[str, Any], shown: _Shown, scenario: Scenario, golden: GoldenCalls) -> str | None:
    outcome, tool = call.get("outcome"), call.get("tool")
    if outcome == "unknown_tool":
        return "non_existent_function"
    if outcome in _SKIPPED or call.get("hazards"):
        return None
    arguments = original_arguments(call)
    on_path = [i for i, step in enumerate(golden.steps) if step == tool]
    if outcome == "ok" and golden.arguments is not None and any(same_value(arguments, golden.arguments[i])
                                                               for i in on_path):  # fmt: skip
        return None  # the golden call itself
    arity = _arity(scenario, str(tool))
    if isinstance(arguments, dict) and arity is not None and not arity[0] <= len(arguments) <= arity[1]:
        return "wrong_argument_count"
    if not all(shown.knows(v) for v in _scalars(arguments)):
        return "unknown_value"
    if outcome == "ok" and (not on_path or golden.arguments is None):
        return None  # a detour, or nothing to compare with
    return "incorrect_value"

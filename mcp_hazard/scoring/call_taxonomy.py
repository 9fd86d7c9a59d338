"""FuncBenchGen's failure taxonomy of calls (paper 003, "Failure Type Analysis"), for episodes that failed.

Silent failures return an ok outcome with a wrong value, so every call is classified, not only those that returned
an error, by tracking which values the agent had been shown before it made the call (seen.py): the task prompt, the tool
listing (descriptions and input schemas: enums, examples), and every earlier result, result text and error
message. A successful call that is exactly a golden step's call gets no class; for the others, in order, the first
that applies:

- `non_existent_function`: the tool name is unknown;
- `wrong_argument_count`: fewer arguments than the tool requires, or more than it has;
- `unknown_value`: some argument value was never shown to the agent (seen.py: a value whole, never a piece of one);
- `incorrect_value`: every value was shown, but the call is not the golden one: a golden-path tool called with
  other arguments than its golden step's, or any call that the tool refused with an error.

A call of a tool that is not on the golden path with values the agent had been shown is not a failure by itself
(a detour): its output does harm only when it is fed on, and that later call is the one classified. Calls a hazard
acted on (rejected, delayed, drifted: the trace's `hazards`), faults of the scenario, and calls that match their
golden step get no class. docs/scoring.md ("Value taxonomy") has a worked example.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scoring.seen import Seen, listing, show_call
from mcp_hazard.scoring.trajectory import GoldenCalls, original_arguments, same_value

CLASSES = ("non_existent_function", "wrong_argument_count", "unknown_value", "incorrect_value")
_SKIPPED = frozenset({"rejected", "cancelled", "fault"})


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _scalars(item)]
    if isinstance(value, list):
        return [s for item in value for s in _scalars(item)]
    return [value]


def _arity(scenario: Scenario, tool: str) -> tuple[int, int] | None:
    """(required, known) argument counts of a tool of the scenario, None for a name it has not; once per scenario
    object and tool name (a failed episode asks it of most of its calls)."""
    key = (id(scenario), tool)
    kept = _ARITIES.get(key)
    if kept is not None and kept[0] is scenario:
        return kept[1]
    spec = scenario.tool(tool)
    arity = None
    if spec is not None:
        props = spec.input_schema.get("properties")
        required = spec.input_schema.get("required")
        arity = (len(required) if isinstance(required, list) else 0, len(props) if isinstance(props, dict) else 0)
    if len(_ARITIES) >= 4096:  # bounded: one entry per scenario and tool name (names a damaged trace makes up too)
        _ARITIES.clear()
    _ARITIES[key] = (scenario, arity)  # the entry keeps its scenario alive, so the id cannot be reused meanwhile
    return arity


_ARITIES: dict[tuple[int, str], tuple[Scenario, tuple[int, int] | None]] = {}


def classify_calls(
    calls: list[dict[str, Any]], scenario: Scenario, task: Task, golden: GoldenCalls
) -> list[tuple[int, str]]:
    """(seq, class) for every classified call, in order (CLASSES)."""
    shown = listing(scenario, task)
    out: list[tuple[int, str]] = []
    for call in calls:
        found = _classify(call, shown, scenario, golden)
        if found is not None:
            out.append((call["seq"], found))
        show_call(shown, call)
    return out


def _classify(call: dict[str, Any], shown: Seen, scenario: Scenario, golden: GoldenCalls) -> str | None:
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
    if not all(shown.holds(v) for v in _scalars(arguments)):
        return "unknown_value"
    if outcome == "ok" and (not on_path or golden.arguments is None):
        return None  # a detour, or nothing to compare with
    return "incorrect_value"

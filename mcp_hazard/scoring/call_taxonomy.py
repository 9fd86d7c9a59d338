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

from mcp_hazard.scenario.models import Scenario
from mcp_hazard.scoring.seen import Seen, listing
from mcp_hazard.scoring.trace_index import EpisodeCalls
from mcp_hazard.scoring.trajectory import GoldenCalls, original_arguments, same_value

CLASSES = ("non_existent_function", "wrong_argument_count", "unknown_value", "incorrect_value")
_SKIPPED = frozenset({"rejected", "cancelled", "fault"})


def _scalars(value: Any) -> list[Any]:
    """The scalars in `value`, depth first, in order; a stack, not recursion (a stranger's trace may nest deep)."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        else:
            found.append(item)
    return found


def _argument_values(arguments: Any) -> Any:
    """`_scalars(arguments)`; flat arguments (the common case) without a call per value."""
    if type(arguments) is dict:
        values = arguments.values()
        if not any(isinstance(v, dict | list) for v in values):
            return values
    return _scalars(arguments)


def _arities(scenario: Scenario) -> dict[str, tuple[int, int]]:
    """(required, known) argument counts of each tool of the scenario by name (the first tool of a name, as
    `Scenario.tool` finds it), once per scenario object: a failed episode asks it of most of its calls."""
    kept = _ARITIES.get(id(scenario))
    if kept is not None and kept[0] is scenario:
        return kept[1]
    found: dict[str, tuple[int, int]] = {}
    for spec in scenario.tools:
        if spec.name not in found:
            props = spec.input_schema.get("properties")
            required = spec.input_schema.get("required")
            found[spec.name] = (len(required) if isinstance(required, list) else 0,
                                len(props) if isinstance(props, dict) else 0)  # fmt: skip
    if len(_ARITIES) >= 4096:  # bounded: one entry per scenario object scored
        _ARITIES.clear()
    _ARITIES[id(scenario)] = (scenario, found)  # the entry keeps its scenario alive, so the id cannot be reused
    return found


_ARITIES: dict[int, tuple[Scenario, dict[str, tuple[int, int]]]] = {}


def classify_calls(episode: EpisodeCalls, golden: GoldenCalls) -> list[tuple[int, str]]:
    """(seq, class) for every classified call, in order (CLASSES). What all the calls showed is left with the
    episode, for the answer's rules to ask (`EpisodeCalls.seen`)."""
    scenario, calls = episode.scenario, episode.calls
    shown = listing(scenario, episode.task)
    arities = _arities(scenario)
    # Each golden tool's golden arguments (empty when the golden path cannot run here): looked up once per call.
    on_path: dict[Any, list[Any]] = {}
    for index, step in enumerate(golden.steps):
        on_path.setdefault(step, []).append(golden.arguments[index] if golden.arguments is not None else None)
    out: list[tuple[int, str]] = []
    runs = golden.arguments is not None
    for call in calls:
        found = _classify(call, shown, arities, on_path, runs)
        if found is not None:
            out.append((call["seq"], found))
        shown.show_call(call)
    episode.keep_seen(shown)
    return out


def _classify(
    call: dict[str, Any], shown: Seen, arities: dict[str, tuple[int, int]], on_path: dict[Any, list[Any]], runs: bool
) -> str | None:
    """The class of one call (CLASSES), None for none. `on_path`: each golden tool's golden arguments; `runs`:
    whether the golden path could run here (else no call is compared with it)."""
    outcome, tool = call.get("outcome"), call.get("tool")
    if outcome == "unknown_tool":
        return "non_existent_function"
    if outcome in _SKIPPED or call.get("hazards"):
        return None
    arguments = original_arguments(call)
    try:
        golden = on_path.get(tool, ())
    except TypeError:  # an unhashable tool name in a damaged trace: no golden step has it
        golden = ()
    if outcome == "ok" and runs:
        for expected in golden:  # a loop, not any(...): asked of every call of a failed episode
            if same_value(arguments, expected):
                return None  # the golden call itself
    arity = arities.get(str(tool))
    if isinstance(arguments, dict) and arity is not None and not arity[0] <= len(arguments) <= arity[1]:
        return "wrong_argument_count"
    for value in _argument_values(arguments):
        if not shown.holds(value):
            return "unknown_value"
    if outcome == "ok" and (not golden or not runs):
        return None  # a detour, or nothing to compare with
    return "incorrect_value"

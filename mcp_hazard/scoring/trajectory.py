"""A task's golden calls and their dependency graph, and the trajectory metrics of the Causal Intervention Benchmark
(paper 000, section 3.3): exact match of the final tool call for single-step tasks, and a relaxed sequence match that
lets independent calls come in any order for multi-step tasks. docs/scoring.md ("Trajectory") states the rules.

The golden calls are the golden path executed against the behaviours (the arguments each step really sends). A step
depends on the steps whose results its arguments read (`{{ s1.total }}`); the longest chain of such edges is the
task's dependency depth (FuncBenchGen's d, paper 003: 0 for one call, 1 for a star).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from mcp_hazard.scenario.expressions import ExpressionError, parse_expression, template_expressions
from mcp_hazard.scenario.models import Scenario, Task


@dataclass(frozen=True)
class GoldenCalls:
    steps: tuple[str, ...]  # the tool of each golden step
    arguments: tuple[Any, ...] | None  # what each step sends; None when the golden path cannot be run here
    depends: tuple[frozenset[int], ...]  # per step: the earlier steps whose results it reads
    depth: int


_CACHE: dict[tuple[int, str], tuple[Scenario, GoldenCalls]] = {}


def _reads(arguments: Any, step_ids: set[str]) -> set[str]:
    """The step ids an argument template names."""
    found: set[str] = set()
    for source in template_expressions(arguments):
        try:
            tree = parse_expression(source)
        except ExpressionError:
            continue
        found |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in step_ids}
    return found


def golden_calls(scenario: Scenario, task: Task) -> GoldenCalls:
    """The golden calls of `task`, computed once per scenario object and task."""
    key = (id(scenario), task.id)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is scenario:
        return cached[1]
    from mcp_hazard.scenario.golden_check import run_golden_path

    steps = task.golden_path.steps
    ids = [step.id for step in steps]
    depends = tuple(
        frozenset(ids.index(name) for name in _reads(step.arguments, set(ids[:index])))
        for index, step in enumerate(steps)
    )
    chain: list[int] = []
    for index in range(len(steps)):
        chain.append(max((chain[d] + 1 for d in depends[index]), default=0))
    try:
        arguments: tuple[Any, ...] | None = tuple(args for _, args, _ in run_golden_path(scenario, task).steps)
    except Exception:  # a python behaviour not allowed here, or an author's bug: no expectation
        arguments = None
    found = GoldenCalls(tuple(step.tool for step in steps), arguments, depends, max(chain, default=0))
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = (scenario, found)
    return found


def same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values, numbers by value (1 == 1.0), booleans never equal to numbers, text exactly."""
    if type(a) is str or type(b) is str:  # the most common value, first
        return type(a) is type(b) and a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        for key in a:  # noqa: SIM110 - a loop, not all() over a generator: every call is compared
            if not same_value(a[key], b[key]):
                return False
        return True
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):  # noqa: SIM110 - as above
            if not same_value(x, y):
                return False
        return True
    return type(a) is type(b) and a == b


def original_arguments(call: dict[str, Any]) -> Any:
    """A call's arguments in the original interface (after the interventions' way back, φ⁻¹)."""
    inner = call.get("inner_arguments")
    return inner if inner is not None else call.get("arguments")


def final_call_matches(calls: list[dict[str, Any]], golden: GoldenCalls) -> bool:
    """Single-step tasks: the last tool call the agent made has the golden step's tool and arguments, and was a call
    of the served interface (not an unknown name, not arguments the served schema refused: a call in the original
    interface's terms that the intervened one does not accept is no match)."""
    if not calls or golden.arguments is None:
        return False
    last = calls[-1]
    if last.get("outcome") in ("unknown_tool", "invalid_arguments"):
        return False
    return last.get("tool") == golden.steps[0] and same_value(original_arguments(last), golden.arguments[0])


def relaxed_sequence_matches(calls: list[dict[str, Any]], golden: GoldenCalls) -> bool:
    """Multi-step tasks: the agent's successful calls, in order, without exact repeats of an earlier successful call,
    are the golden calls in an order the dependencies allow (each step after every step it reads). Failed calls
    changed nothing the task reads and are left out; an extra successful call (a distractor, a wrong argument)
    breaks the match."""
    if golden.arguments is None:
        return False
    steps, depends, expected = golden.steps, golden.depends, golden.arguments
    trajectory: list[tuple[Any, Any]] = []  # plain loops below, no generators: asked of every multi-step episode
    for call in calls:
        if call.get("outcome") != "ok":
            continue
        tool = call.get("tool")
        if tool not in steps:
            return False  # a successful call of a tool no golden step calls: an extra call, whatever its arguments
        arguments = original_arguments(call)
        for made, earlier in trajectory:
            if made == tool and same_value(arguments, earlier):
                break  # an exact repeat of an earlier successful call
        else:
            trajectory.append((tool, arguments))
    if len(trajectory) != len(steps):
        return False
    done: set[int] = set()
    for tool, arguments in trajectory:
        for index in range(len(steps)):
            if (
                index not in done
                and depends[index] <= done
                and steps[index] == tool
                and same_value(arguments, expected[index])
            ):
                done.add(index)
                break
        else:
            return False
    return True


def trajectory_match(calls: list[dict[str, Any]], golden: GoldenCalls) -> tuple[bool | None, str | None]:
    """(matched, rule): `final_call` for single-step tasks, `relaxed_sequence` for the others; (None, None) when
    the golden calls are unknown."""
    if golden.arguments is None:
        return None, None
    if len(golden.steps) == 1:
        return final_call_matches(calls, golden), "final_call"
    return relaxed_sequence_matches(calls, golden), "relaxed_sequence"

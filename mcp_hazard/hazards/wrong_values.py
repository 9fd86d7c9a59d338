"""A scenario's wrong readings: which value of a golden step's result to serve wrong so that the answer changes.

The scenario's answer to what `silent_wrong_value` asks of its tools (tool_facts.py): the golden path runs once, the
values the rest of the task reads are its candidates, and a replacement is kept only if the golden path, run on the
values served so far in the episode, no longer reaches the canonical answer. Served values are remembered per call
(tool and arguments), not per golden step: once a wrong value has sent the trusting agent elsewhere, a golden step's
call may come in another step's place, and only the call it makes says what it reads.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.hazards.siblings import golden_tools
from mcp_hazard.hazards.trusting import CallKey, bites, call_key, trusting_answer
from mcp_hazard.scenario.arguments import argument_problem
from mcp_hazard.scenario.golden_check import run_golden_path
from mcp_hazard.scenario.models import Scenario, TableBehaviour, Task, ToolSpec
from mcp_hazard.scenario.serves import read_paths
from mcp_hazard.stable import draw

Path = tuple[str | int, ...]
PER_LEAF = 4  # replacement values tried for one field before the next field
MAX_TRIES = 48  # simulated golden paths per firing, at most
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TIME = re.compile(r"^(\d{1,2}):(\d{2})$")
_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")


@dataclass
class _Plan:
    """The golden path run once: each step's arguments and true result, and the result leaves the task reads."""

    steps: list[tuple[str, dict[str, Any], Any]]
    leaves: list[list[tuple[Path, Any]]]  # per step: (path, value) of each read leaf that does not echo an argument
    biting: dict[int, bool] = field(default_factory=dict)  # step index -> some replacement bites (seed 0)


# plan_of() per scenario object and task: the entry holds the scenario, so its id cannot be reused while it lives
_plans: dict[tuple[int, str], tuple[Scenario, _Plan | None]] = {}
_PLANS_LIMIT = 256


def _leaves(value: Any, prefix: Path) -> list[tuple[Path, Any]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*prefix, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*prefix, index))]
    if value is None or isinstance(value, bool):
        return []
    return [(prefix, value)]


def resolve(value: Any, path: Path | list[Any]) -> tuple[bool, Any]:
    """(found, the value at `path` in `value`)."""
    for key in path:
        if isinstance(value, dict):
            if key not in value:
                return False, None
            value = value[key]
        elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
            value = value[key]
        else:
            return False, None
    return True, value


def same_value(a: Any, b: Any) -> bool:
    """Equal as a reader would compare them: numbers by value (189 and 189.0), text without regard to case."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    return bool(a == b)


def _read_leaves(task: Task, index: int, result: Any, arguments: dict[str, Any]) -> list[tuple[Path, Any]]:
    """Leaves of step `index`'s result that later arguments or the answer read, minus those echoing an argument."""
    echoes = [v for _p, v in _leaves(arguments, ())]
    found: list[tuple[Path, Any]] = []
    for path in read_paths(task, index):
        ok, node = resolve(result, path)
        for leaf in _leaves(node, tuple(path)) if ok else []:
            if leaf not in found and not any(same_value(leaf[1], echo) for echo in echoes):
                found.append(leaf)
    return found


def plan_of(scenario: Scenario, task: Task) -> _Plan | None:
    """The task's golden run and read leaves, once per scenario object; None when the golden path cannot run here."""
    key = (id(scenario), task.id)
    entry = _plans.get(key)
    if entry is None or entry[0] is not scenario:
        while len(_plans) >= _PLANS_LIMIT:
            _plans.pop(next(iter(_plans)))
        plan: _Plan | None = None
        try:
            run = run_golden_path(scenario, task)
        except Exception:  # a python behaviour (not allowed here) or a broken path: nothing to serve wrong
            pass
        else:
            leaves = [_read_leaves(task, i, result, args) for i, (_id, args, result) in enumerate(run.steps)]
            plan = _Plan(steps=run.steps, leaves=leaves)
        entry = _plans[key] = (scenario, plan)
    return entry[1]


def _vocabulary(tool: ToolSpec, result: Any, key: str | int) -> list[str]:
    """Other texts this tool serves under the same field name: from its table rows and the result itself."""
    sources: list[Any] = [result]
    if isinstance(tool.behaviour, TableBehaviour):
        sources.extend(row.result for row in tool.behaviour.rows if row.error is None)
    words: set[str] = set()
    for source in sources:
        for path, value in _leaves(source, ()):
            if path and path[-1] == key and isinstance(value, str) and "{{" not in value:
                words.add(value)
    return sorted(words)


def _shifted_text(value: str, fraction: float, sign: int) -> str:
    """Another text of the same form: a date or time moved, a trailing number changed, else a suffix."""
    date = _DATE.match(value)
    if date:
        try:
            day = dt.date(int(date[1]), int(date[2]), int(date[3]))
        except ValueError:
            return value + " (rev. 2)"
        return (day + dt.timedelta(days=sign * (1 + int(fraction * 10)))).isoformat()
    time = _TIME.match(value)
    if time:
        minutes = (int(time[1]) * 60 + int(time[2]) + sign * (10 + 10 * int(fraction * 10))) % (24 * 60)
        return f"{minutes // 60:0{len(time[1])}d}:{minutes % 60:02d}"
    digits = _TRAILING_DIGITS.match(value)
    if digits:
        number = int(digits[2]) + sign * (1 + int(fraction * 10))
        number = number if number >= 0 else int(digits[2]) + 1 + int(fraction * 10)
        return f"{digits[1]}{number:0{len(digits[2])}d}"
    return value + " (rev. 2)"


def wrong_values(tool: ToolSpec, result: Any, path: Path, value: Any, *keys: object) -> list[Any]:
    """Replacement values for the leaf `value` at `path`, each of the same type and never equal to it, in an order
    fixed by `keys`: numbers moved by 5-40 % (at least 1 for integers, staying at or above 0 when it was), text from
    the same field's other values (else a variant of the same form)."""
    out: list[Any] = []
    if isinstance(value, str):
        words = [w for w in _vocabulary(tool, result, path[-1] if path else "") if not same_value(w, value)]
        words.sort(key=lambda w: draw(*keys, "word", w))
        out.extend(words[:PER_LEAF])
    for attempt in range(PER_LEAF * 2):
        if len(out) >= PER_LEAF:
            break
        fraction = 0.05 + 0.35 * draw(*keys, "shift", attempt)
        sign = 1 if draw(*keys, "sign", attempt) < 0.5 else -1
        candidate: Any
        if isinstance(value, str):
            candidate = _shifted_text(value, fraction, sign)
        elif isinstance(value, int):
            delta = max(1, round(abs(value) * fraction))
            candidate = value + sign * delta if value - delta >= 0 or value < 0 else value + delta
        elif isinstance(value, float):
            places = max(0, min(2, len(repr(value).split(".")[1]) if "." in repr(value) else 0))
            moved = value * (1 + sign * fraction) if value >= 0 else value * (1 - sign * fraction)
            candidate = round(moved, places) if places else float(round(moved))
            if same_value(candidate, value):
                candidate = value + (10.0**-places if places else 1.0)
        else:
            break
        if not same_value(candidate, value) and not any(same_value(candidate, o) for o in out):
            out.append(candidate)
    return out


def replaced(value: Any, path: Path, new: Any) -> Any:
    """A copy of `value` with the leaf at `path` set to `new`."""
    out = copy.deepcopy(value)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


def _choice(
    scenario: Scenario,
    task: Task,
    plan: _Plan,
    index: int,
    at: CallKey,
    earlier: dict[CallKey, Any],
    keys: tuple[object, ...],
) -> tuple[Path, Any, Any] | None:
    """(path, served value, served result) for step `index`'s true result read by the call `at`: the first
    replacement, in the order `keys` fix, that bites given the values `earlier` served; fields named like ids are
    tried last."""
    tool = scenario.tool(task.golden_path.steps[index].tool)
    result = plan.steps[index][2]
    if tool is None:
        return None
    leaves = sorted(
        plan.leaves[index],
        key=lambda leaf: (str(leaf[0][-1]).casefold().endswith("id"), draw(*keys, "field", *leaf[0])),
    )
    tries = 0
    for path, value in leaves:
        for new in wrong_values(tool, result, path, value, *keys, *path):
            tries += 1
            if tries > MAX_TRIES:
                return None
            served_result = replaced(result, path, new)
            if tool.output_schema is not None and argument_problem(tool.output_schema, served_result):
                continue
            if bites(scenario, task, {**earlier, at: served_result}):
                return path, new, served_result
    return None


def biting_steps(scenario: Scenario, task: Task) -> list[int]:
    """Golden steps where some replacement makes the golden path miss the answer (keys of seed 0)."""
    plan = plan_of(scenario, task)
    if plan is None:
        return []
    for index, step in enumerate(task.golden_path.steps):
        if index not in plan.biting:
            keys = (0, scenario.id, task.id, step.tool, index)
            at = call_key(step.tool, plan.steps[index][1])
            plan.biting[index] = _choice(scenario, task, plan, index, at, {}, keys) is not None
    return [index for index, ok in sorted(plan.biting.items()) if ok]


def reads_only(scenario: Scenario, tool: str) -> bool:
    """Whether `tool` only reads: a write's value cannot be verified by calling it again."""
    spec = scenario.tool(tool)
    return spec is None or spec.effect != "write"


def wrong_value_problem(scenario: Scenario, task: Task, tool: str) -> str | None:
    """None when some value of `tool` that `task` reads, served wrong, changes the answer; else why not."""
    steps = biting_steps(scenario, task)
    biting = tool in golden_tools(task) and any(task.golden_path.steps[i].tool == tool for i in steps)
    if biting and reads_only(scenario, tool):
        return None
    if not reads_only(scenario, tool):
        return f"{tool!r} is a write (effect: write): verifying its value by calling it again would do it twice"
    return f"no value of {tool!r} that task {task.id!r} reads can be served wrong so that the answer changes"


def wrong_reading(hazard: Any, call: Any, result: Any) -> tuple[Path, Any, Any, Any] | None:
    """(path, right value, served value, served result) for the first reading of a golden step's true result, or
    None. The hazard keeps what it served (`served` by step, `served_calls` by call, `finished` tools)."""
    scenario, task = hazard.scenario, hazard.task
    name = call.tool.name
    if name in hazard.finished:
        return None  # every golden step of this tool had its wrong first reading: nothing left to do
    steps = task.golden_path.steps
    if any(r.tool == name and r.outcome == "ok" and r.arguments == call.sent for r in call.history):
        return None  # a repeat of a call that already succeeded reads the right value: that is the recovery
    plan = plan_of(scenario, task)
    if plan is None:
        return None
    index = next(
        (i for i, s in enumerate(steps)
         if s.tool == name and i not in hazard.served and result == plan.steps[i][2]),
        None,
    )  # fmt: skip
    if index is None:
        return None  # not a golden step's true result: a detour, left alone
    keys = (call.seed, scenario.id, task.id, name, call.slot, hazard.salt)
    at = call_key(name, call.arguments)
    trusting: set[CallKey] = set()
    trusting_answer(scenario, task, hazard.served_calls, trusting)
    if at not in trusting:  # a call of the agent's own (other arguments): judged in the place of the step it read
        at = call_key(name, plan.steps[index][1])
    chosen = _choice(scenario, task, plan, index, at, hazard.served_calls, keys)
    if chosen is None:
        return None
    path, new, served = chosen
    hazard.served[index] = served
    hazard.served_calls[at] = served
    if all(s.tool != name or i in hazard.served for i, s in enumerate(steps)):
        hazard.finished.add(name)
    return path, resolve(result, path)[1], new, served

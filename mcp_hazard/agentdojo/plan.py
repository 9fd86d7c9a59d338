"""A task's golden path from AgentDojo's ground truth: its function calls in order, and its ground-truth output as
the answer. Never served; the reference agents follow it as they follow a scenario's golden path.

AgentDojo computes a ground truth's arguments from the environment before the episode (`ground_truth(pre_env)`), so
they are literals. Where a literal is a whole value an earlier call's result carries (an event id from a search, a
transaction's recipient and amount), the step reads it from that result instead (`{{ s1[3].recipient }}`): the plan
then uses what the episode actually returned, as an agent does, and a hazard that changes a result changes what the
plan does next. A value is read only from a field of a matching name (`amount` from an `amount`, an id from an `id`
or `id_`), except a text of three or more characters that is not a number, which may come from any field; the
templates are checked to give back the ground truth's own values on the ground truth's own results.
"""

from __future__ import annotations

import re
from typing import Any

from mcp_hazard.scenario.expressions import ExpressionError, render, template_expressions
from mcp_hazard.scenario.models import GoldenPath, GoldenStep

_NUMBERISH = re.compile(r"^[\d\s.,:+-]*$")


def step_id(index: int) -> str:
    return f"s{index + 1}"


def _leaves(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*path, index))]
    return [(path, value)]


def _names_fit(argument: str, field: str | int | None) -> bool:
    """Whether a number or short value passed as `argument` may come from `field` (the last key of its path)."""
    if not isinstance(field, str):
        return False
    a, f = argument.lower().strip("_"), field.lower().strip("_")
    if a == f:
        return True
    return (a.endswith("id") and f in ("id", "id_")) or (f.endswith("id") and a in ("id", "id_"))


def _source(argument: str, value: Any, results: list[Any]) -> str | None:
    """The template reading `value` from the latest result that carries it whole, or None."""
    if value is None or isinstance(value, bool) or value == "" or isinstance(value, dict | list):
        return None
    free = isinstance(value, str) and len(value) >= 3 and not _NUMBERISH.match(value)
    for index in range(len(results) - 1, -1, -1):
        for path, leaf in _leaves(results[index]):
            if isinstance(leaf, bool) or leaf is None or (not path and not free):
                continue
            same = leaf == value and (isinstance(leaf, str) == isinstance(value, str))
            if same and (free or _names_fit(argument, path[-1] if path else None)):
                return "{{ " + step_id(index) + "".join(_accessor(part) for part in path) + " }}"
    return None


def _accessor(part: str | int) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
        return f".{part}"
    return "[" + repr(part) + "]"


def templated(arguments: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """The arguments with each whole value an earlier result carries read from it (lists item by item)."""

    def one(name: str, value: Any) -> Any:
        if isinstance(value, list):
            return [one(name, item) for item in value]
        found = _source(name, value, results)
        return found if found is not None else value

    return {name: one(name, value) for name, value in arguments.items()}


def literal(value: Any) -> bool:
    """Whether a ground-truth value can stand in a template as it is (no `{{` of its own)."""
    return not template_expressions(value)


def templated_answer(answer: str, results: list[Any]) -> str:
    """The ground-truth output with each text an earlier result carries whole (three or more characters, not a
    number) read from that result: `{{ s1[0].participants[1] }} ...`; the longest such texts first."""
    if not answer or not literal(answer):
        return answer
    sources: dict[str, str] = {}
    for index in range(len(results)):
        for path, leaf in _leaves(results[index]):
            if isinstance(leaf, str) and len(leaf) >= 3 and not _NUMBERISH.match(leaf) and leaf in answer and path:
                sources[leaf] = "{{ " + step_id(index) + "".join(_accessor(part) for part in path) + " }}"
    if not sources:
        return answer
    pattern = re.compile("|".join(re.escape(text) for text in sorted(sources, key=len, reverse=True)))
    return pattern.sub(lambda found: sources[found.group()], answer)


def _renders_back(template: Any, value: Any, results: list[Any]) -> bool:
    """Whether `template`, filled from the ground truth's own results, gives back the ground truth's `value`."""
    try:
        return render(template, {step_id(i): result for i, result in enumerate(results)}) == value
    except ExpressionError:
        return False


def build_path(calls: list[tuple[str, dict[str, Any]]], results: list[Any], answer: Any) -> GoldenPath:
    """The golden path; arguments and answer read from earlier results where they carry the values (module doc),
    each template kept only when it gives back the ground truth's own values."""
    steps = []
    for index, (function, arguments) in enumerate(calls):
        given = arguments
        if literal(arguments):
            reading = templated(arguments, results[:index])
            given = reading if _renders_back(reading, arguments, results[:index]) else arguments
        steps.append(GoldenStep.model_construct(id=step_id(index), tool=function, arguments=given))
    if isinstance(answer, str):
        said = templated_answer(answer, results)
        answer = said if _renders_back(said, answer, results) else answer
    return GoldenPath.model_construct(steps=steps, answer=answer)


def reads(path: GoldenPath) -> dict[str, list[tuple[str | int, ...]]]:
    """Per step id, the paths into its result that later steps and the answer read (`s1[3].amount` -> (3, 'amount'))."""
    from mcp_hazard.scenario.expressions import access_paths

    found: dict[str, list[tuple[str | int, ...]]] = {}
    templates = [step.arguments for step in path.steps] + [path.answer]
    for step in path.steps:
        for template in templates:
            for source in template_expressions(template):
                for accessed in access_paths(source, step.id):
                    if accessed and tuple(accessed) not in found.setdefault(step.id, []):
                        found[step.id].append(tuple(accessed))
    return {key: value for key, value in found.items() if value}


def golden_plan(suite: Any, user_task: Any) -> GoldenPath:
    """The user task's ground truth, run on a fresh copy of its environment, as a golden path."""
    calls, results = suite.ground_truth(user_task)
    return build_path(calls, results, str(getattr(user_task, "GROUND_TRUTH_OUTPUT", "") or ""))


def injection_plan(suite: Any, injection_task: Any) -> GoldenPath:
    """An injection task's ground truth (what an attacker wants done), as a golden path for the obedient agent."""
    calls, results = suite.ground_truth(injection_task)
    return build_path(calls, results, str(getattr(injection_task, "GROUND_TRUTH_OUTPUT", "") or ""))

"""Run a tool's behaviour: arguments in, a result or a declared error out, deterministically."""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.errors import UserError
from mcp_hazard.scenario.expression_functions import text_of
from mcp_hazard.scenario.expressions import Budget, ExpressionError, evaluate, render
from mcp_hazard.scenario.models import (
    ComputeBehaviour,
    ConstantBehaviour,
    Outcome,
    PythonBehaviour,
    TableBehaviour,
    ToolSpec,
)


@dataclass(frozen=True)
class ToolOutcome:
    """What a call produced: `result` when `error` is None, else the declared error message. `raw` is the reply as a
    real server sent it (proxy mode), served as it is unless a hazard changes the outcome."""

    result: Any = None
    error: str | None = None
    raw: Any = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None


class BehaviourFault(Exception):
    """The scenario's behaviour itself is broken for these arguments (not the agent's fault)."""


class PythonNotAllowed(UserError):
    """A scenario asks to run Python code but the user did not pass --allow-python."""


def argument_names(
    tool: ToolSpec, arguments: Mapping[str, Any], writes: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Names an expression sees: every declared argument (None when absent), plus `args` for the whole mapping and
    `writes` for the episode's writes that ran so far ({tool, arguments, result} each, oldest first): the one piece
    of state a scenario has, so a read can show whether a write went through (lost_response's recovery)."""
    names: dict[str, Any] = {key: None for key in tool.input_schema.get("properties", {}) or {}}
    names.update(arguments)
    names.setdefault("args", dict(arguments))  # an argument really called `args` wins
    names.setdefault("writes", list(writes or ()))
    return names


def _same(expected: Any, given: Any, casefold: bool) -> bool:
    if isinstance(expected, bool) or isinstance(given, bool):
        return expected is given
    if isinstance(expected, int | float) and isinstance(given, int | float):
        return math.isclose(expected, given, rel_tol=0, abs_tol=1e-9)
    if casefold and isinstance(expected, str) and isinstance(given, str):
        return expected.strip().casefold() == given.strip().casefold()
    return bool(expected == given)


def _outcome(outcome: Outcome | ConstantBehaviour, names: Mapping[str, Any], budget: Budget) -> ToolOutcome:
    if outcome.error is not None:
        return ToolOutcome(error=_text(render(outcome.error, names, budget), budget))
    return ToolOutcome(result=render(outcome.result, names, budget))


def _text(error: Any, budget: Budget) -> str:
    """A declared error's message: a template that rendered to a list or mapping becomes its JSON text, made within
    the budget (Python's text of a shared one could be huge); any other value its Python text, as always."""
    return text_of(error, budget) if isinstance(error, list | dict) else str(error)


def _run_table(
    behaviour: TableBehaviour, names: dict[str, Any], arguments: Mapping[str, Any], budget: Budget
) -> ToolOutcome:
    for row in behaviour.rows:
        if all(
            key in arguments and _same(value, arguments[key], behaviour.casefold) for key, value in row.when.items()
        ):
            return _outcome(row, names, budget)
    return _outcome(behaviour.default, names, budget)


def _run_compute(behaviour: ComputeBehaviour, names: dict[str, Any], budget: Budget) -> ToolOutcome:
    scope = dict(names)
    for name, expression in behaviour.let.items():
        try:
            scope[name] = evaluate(expression, scope, budget)
        except ExpressionError as exc:
            raise type(exc)(f"let {name}: {exc}") from None
    for guard in behaviour.errors:
        if evaluate(guard.if_, scope, budget):
            return ToolOutcome(error=_text(render(guard.error, scope, budget), budget))
    return ToolOutcome(result=render(behaviour.result, scope, budget))


def load_python_function(spec: str) -> Callable[[dict[str, Any]], Any]:
    module_name, _, function_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"python behaviour {spec!r}: cannot import {module_name!r}: {exc}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise UserError(f"python behaviour {spec!r}: {module_name!r} has no function {function_name!r}")
    return function


def _run_python(behaviour: PythonBehaviour, arguments: Mapping[str, Any], allow_python: bool) -> ToolOutcome:
    if not allow_python:
        raise PythonNotAllowed(
            f"behaviour runs Python code ({behaviour.function}); pass --allow-python if you trust this scenario file"
        )
    function = load_python_function(behaviour.function)
    try:
        result = function(dict(arguments))
    except ValueError as exc:
        return ToolOutcome(error=str(exc))
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        raise BehaviourFault(f"python behaviour returned a value that is not JSON: {exc}") from None
    return ToolOutcome(result=result)


def run_behaviour(
    tool: ToolSpec,
    arguments: Mapping[str, Any],
    *,
    allow_python: bool = False,
    writes: list[dict[str, Any]] | None = None,
) -> ToolOutcome:
    """Execute `tool`'s behaviour; raise BehaviourFault when the scenario itself cannot produce an outcome. Its
    expressions share one budget (expression_budget.py): the call fails when they build more than it allows."""
    names = argument_names(tool, arguments, writes)
    behaviour = tool.behaviour
    try:
        if isinstance(behaviour, TableBehaviour):
            return _run_table(behaviour, names, arguments, Budget())
        if isinstance(behaviour, ConstantBehaviour):
            return _outcome(behaviour, names, Budget())
        if isinstance(behaviour, ComputeBehaviour):
            return _run_compute(behaviour, names, Budget())
        return _run_python(behaviour, arguments, allow_python)
    except ExpressionError as exc:
        raise BehaviourFault(str(exc)) from None

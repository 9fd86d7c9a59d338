"""Turn hazard declarations into an episode's hazard instances, checking every parameter on the way.

`--hazard KIND[:key=value,...]` (or a JSON object) on the command line; `all` (every kind that applies to the task,
with its defaults) and `declared` (the hazards the scenario file offers for the task and its tools) are shorthands.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from mcp_hazard.errors import UserError
from mcp_hazard.hazards.base import REGISTRY, Hazard, kinds_for, refused
from mcp_hazard.hazards.capabilities import applicable_tools, changes_interface, targets, unfit, usable
from mcp_hazard.json_parse import loads
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.suggest import did_you_mean

SCHEDULE_KEYS = {"probability", "slots", "after_calls", "times"}
SHORTHANDS = ("all", "declared")


def _value(text: str) -> Any:
    try:
        return loads(text)
    except json.JSONDecodeError:
        return text


def parse_hazard_option(text: str) -> list[HazardSpec] | str:
    """`KIND[:key=value,...]` -> a spec; `all`/`declared` are returned as the word, expanded per task later."""
    text = text.strip()
    if text in SHORTHANDS:
        return text
    if text.startswith("{"):
        try:
            return [HazardSpec.model_validate_json(text)]
        except ValidationError as exc:
            raise UserError(f"--hazard {_shown(repr(text))}: {_first_error(exc)}") from None
    kind, _, rest = text.partition(":")
    if not kind:
        raise UserError(f"--hazard {_shown(repr(text))}: expected KIND[:key=value,...]")
    fields: dict[str, Any] = {"kind": kind}
    schedule: dict[str, Any] = {}
    params: dict[str, Any] = {}
    for pair in filter(None, rest.split(",")):
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"--hazard {_shown(repr(text))}: {_shown(repr(pair))} is not key=value")
        if key == "tools":
            fields["tools"] = [t for t in raw.split("+") if t]
        elif key in SCHEDULE_KEYS:
            schedule[key] = [_value(v) for v in raw.split("+")] if key == "slots" else _value(raw)
        else:
            params[key] = _value(raw)
    if schedule:
        fields["schedule"] = schedule
    fields["params"] = params
    try:
        return [HazardSpec.model_validate(fields)]
    except ValidationError as exc:
        raise UserError(f"--hazard {_shown(repr(text))}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}, got {_shown(json.dumps(error.get('input'), default=str))}" if where else message


def _shown(text: str, limit: int = 80) -> str:
    """A value the user typed, quoted back in an error: enough to find it, not all of a 100 KB argument."""
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text):,} characters)"


def declared_hazards(scenario: Scenario, task: Task) -> list[HazardSpec]:
    specs = list(task.hazards)
    served = {tool.name for tool in scenario.task_tools(task)}
    for tool in scenario.tools:
        if tool.name in served:
            specs.extend(
                spec if spec.tools else spec.model_copy(update={"tools": [tool.name]}) for spec in tool.hazards
            )
    return specs


def all_hazards(scenario: Scenario, task: Task) -> list[HazardSpec]:
    """Every kind that applies, with its defaults. Kinds that change a tool's interface share the tools out in turn,
    since one tool cannot honour two interface changes at once."""
    specs: list[HazardSpec] = []
    registry = kinds_for(scenario)
    interface_kinds = sorted(k for k, cls in registry.items() if changes_interface(cls))
    taken: set[str] = set()
    for kind, cls in sorted(registry.items()):
        tools = applicable_tools(cls, scenario, task)
        if not tools:
            continue
        if changes_interface(cls):
            position = interface_kinds.index(kind)
            fits = _changeable(kind, scenario, task)  # a tool with no argument to change is dealt out, not kept
            mine = [t for i, t in enumerate(tools) if i % len(interface_kinds) == position and t not in taken
                    and t in fits]  # fmt: skip
            mine = mine or [t for t in tools if t not in taken and t in fits][:1]
            if not mine:
                continue
            taken.update(mine)
            specs.append(HazardSpec(kind=kind, tools=mine))
        else:
            specs.append(HazardSpec(kind=kind))
    return specs


def _changeable(kind: str, scenario: Scenario, task: Task) -> set[str]:
    """The tools the kind, with its defaults, can change in `task` (`usable`): a tool whose arguments are all
    optional has none that invocation_error can make a call miss."""
    try:
        hazard, _ = check_spec(HazardSpec(kind=kind), 0, scenario, task)
    except NoToolError:
        return set()
    return {tool for tool in applicable_tools(type(hazard), scenario, task) if usable(hazard, tool) is None}


def expand(options: list[HazardSpec | str], scenario: Scenario, task: Task) -> list[HazardSpec]:
    """The concrete hazard list of one episode, shorthands expanded (the trace records this list)."""
    specs: list[HazardSpec] = []
    for option in options:
        if option == "all":
            specs.extend(all_hazards(scenario, task))
        elif option == "declared":
            specs.extend(declared_hazards(scenario, task))
        elif isinstance(option, HazardSpec):
            specs.append(option)
    return specs


class NoToolError(UserError):
    """A hazard that can act on no tool of the task; `reason` says why, as the kind gives it."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def unfit_reason(spec: HazardSpec, scenario: Scenario, task: Task) -> str | None:
    """None when `spec` can act in `task`; else why not, as its kind says it (what the task lacks, or what its
    parameters rule out). Any other problem of the spec (a bad parameter, an unknown tool) is raised."""
    try:
        check_spec(spec, 0, scenario, task)
    except NoToolError as exc:
        return exc.reason
    return None


def applicable_options(options: list[HazardSpec | str], scenario: Scenario, task: Task) -> list[HazardSpec]:
    """The concrete hazards of `options` that can act in `task`: a kind given without tools that fits no tool of the
    task is dropped (a matrix crosses every kind with every task); any other problem is still an error."""
    fitting = []
    for index, spec in enumerate(expand(options, scenario, task)):
        try:
            check_spec(spec, index, scenario, task)
        except NoToolError:
            field = spec.params.get("field")
            known = any(field in (t.input_schema.get("properties") or {}) for t in scenario.tools)
            if spec.tools is None and (field is None or known):
                continue
            raise
        fitting.append(spec)
    return fitting


# Kinds that only another kind of tool environment has: named as such, not as unknown, where they do not apply.
ELSEWHERE = {"injection": "AgentDojo suites (agentdojo:SUITE)"}


def check_spec(spec: HazardSpec, index: int, scenario: Scenario, task: Task) -> tuple[Hazard, set[str]]:
    """Instantiate one hazard for an episode; every bad parameter is a one-line UserError naming the hazard."""
    label = f"hazard #{index + 1} ({spec.kind})"
    registry = kinds_for(scenario)
    cls = registry.get(spec.kind)
    if cls is None and spec.kind in ELSEWHERE:
        where = ELSEWHERE[spec.kind]
        raise UserError(f"{label}: kind {spec.kind!r} applies only to {where}, not to scenario {scenario.id!r}")
    refusal = refused(scenario, spec.kind) if cls is None else None
    if refusal is not None:
        raise UserError(f"{label}: {refusal}")
    if cls is None:
        hint = did_you_mean(spec.kind, registry)
        raise UserError(f"{label}: unknown kind{hint}; known kinds: {', '.join(sorted(registry))}")
    try:
        params = cls.Params.model_validate(spec.params)
    except ValidationError as exc:
        raise UserError(f"{label}: params.{_first_error(exc)}") from None
    served = {tool.name for tool in scenario.task_tools(task)}
    if spec.tools is not None:
        for name in spec.tools:
            if scenario.tool(name) is None:
                hint = did_you_mean(name, (t.name for t in scenario.tools))
                raise UserError(f"{label}: no tool named {name!r} in scenario {scenario.id!r}{hint}")
            if name not in served:
                raise UserError(f"{label}: tool {name!r} is not served for task {task.id!r}")
        tools = list(spec.tools)
    else:
        tools = applicable_tools(cls, scenario, task)
    try:
        hazard = cls(spec, params, index, scenario, task)
    except ValidationError as exc:
        raise UserError(f"{label}: schedule.{_first_error(exc)}") from None
    reasons = {tool: usable(hazard, tool) for tool in tools}
    if spec.tools is not None:
        bad = next(((tool, why) for tool, why in reasons.items() if why), None)
        if bad is not None:
            raise UserError(f"{label}: {bad[1]}")
    else:
        tools = [tool for tool in tools if reasons[tool] is None]
    if not tools:
        why = next((why for why in reasons.values() if why), None) or unfit(cls, scenario, task)
        raise NoToolError(f"{label}: applies to no tool of task {task.id!r} ({why})", why)
    return hazard, targets(hazard, tools)


def build_hazards(specs: list[HazardSpec], scenario: Scenario, task: Task) -> list[tuple[Hazard, set[str]]]:
    """Every hazard of an episode; two interface changes on one tool are refused, as they cannot both be honoured."""
    built = [check_spec(spec, index, scenario, task) for index, spec in enumerate(specs)]
    changed: dict[str, Hazard] = {}
    for hazard, tools in built:
        if not changes_interface(hazard):
            continue
        for tool in sorted(tools):
            if tool in changed:
                other = changed[tool]
                raise UserError(
                    f"hazard #{hazard.index + 1} ({hazard.kind}) and hazard #{other.index + 1} ({other.kind}) both "
                    f"change the interface of {tool!r}; give them different tools"
                )
            changed[tool] = hazard
    return built


def describe_kinds() -> list[dict[str, Any]]:
    """What `mcp-hazard hazards` prints: each kind with its family, recovery paths, failpoints and parameters."""
    kinds = []
    for kind, cls in sorted(REGISTRY.items()):
        schema = cls.Params.model_json_schema()
        params = {
            name: {k: v for k, v in prop.items() if k in ("type", "default", "enum", "description", "anyOf")}
            for name, prop in schema.get("properties", {}).items()
        }
        kinds.append({
            "kind": kind, "family": cls.family, "summary": cls.summary, "recovery": list(cls.recovery),
            "failpoints": list(cls.failpoints), "default_schedule": cls.default_schedule, "params": params,
        })  # fmt: skip
    return kinds

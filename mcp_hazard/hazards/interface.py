"""Argument-level interface changes shared by invocation errors and specification drift, and how a hazard picks one.

Each change knows how the new interface looks (a schema edit) and how to map a call in the new shape back to the
original behaviour's arguments; a call in the old shape is rejected with a message (strict) and a hint (guided).
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass
from dataclasses import field as attribute
from typing import Any, Literal

from mcp_hazard.hazards.base import Hazard, HazardParams, Rejection
from mcp_hazard.hazards.capabilities import ChangesInterface
from mcp_hazard.scenario.models import ToolSpec
from mcp_hazard.stable import choose

ChangeMode = Literal["date_format", "renamed_field", "new_required", "type_as_string"]
InvocationMode = Literal["date_format", "renamed_field", "type_as_string"]
# new_required is not an invocation error: with a stale listing no agent could learn the required value.
MODES: tuple[ChangeMode, ...] = ("date_format", "renamed_field", "type_as_string")
ALL_MODES: tuple[ChangeMode, ...] = (*MODES, "new_required")
NEW_FIELD_NAMES = {"id": "identifier", "code": "code_value", "date": "on_date", "name": "label", "city": "locality"}
REQUIRED_FLAG = ("api_version", "2")


class ChangeParams(HazardParams):
    """The parameters an argument change reads: which mode, on which field (both chosen per seed when unset)."""

    mode: InvocationMode | None = None
    field: str | None = None


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def candidate_fields(spec: ToolSpec, mode: ChangeMode) -> list[str]:
    """Fields of `spec` that `mode` can change, in schema order."""
    props = _properties(spec.input_schema)
    required = set(spec.input_schema.get("required", []))
    if mode == "date_format":
        return [n for n, p in props.items() if p.get("format") == "date" or ("date" in n and p.get("type") == "string")]
    if mode == "type_as_string":
        return [n for n, p in props.items() if p.get("type") in ("number", "integer")]
    if mode == "renamed_field":
        return [n for n in props if n in required]
    return ["*"]  # new_required adds a field instead of changing one


def renamed(field: str) -> str:
    for part, replacement in NEW_FIELD_NAMES.items():
        if field.endswith(part):
            return field[: -len(part)] + replacement
    return f"{field}_value"


@dataclass
class ArgumentChange:
    mode: ChangeMode
    field: str
    # (schema below, changed schema): one changed object per schema, so validators cached by identity stay warm
    _last: tuple[dict[str, Any], dict[str, Any]] | None = attribute(default=None, init=False, repr=False, compare=False)

    @classmethod
    def pick(cls, spec: ToolSpec, mode: ChangeMode, field: str | None, *keys: object) -> ArgumentChange | None:
        options = candidate_fields(spec, mode)
        if field is not None:
            return cls(mode, field) if field in options or mode == "new_required" else None
        return cls(mode, choose(options, *keys)) if options else None

    @property
    def new_field(self) -> str:
        if self.mode == "renamed_field":
            return renamed(self.field)
        if self.mode == "new_required":
            return REQUIRED_FLAG[0]
        return self.field

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "field": self.field, "new_field": self.new_field}

    def schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The input schema of the changed interface (the same object for the same schema below)."""
        if self._last is not None and self._last[0] is schema:
            return self._last[1]
        new = self._changed(schema)
        self._last = (schema, new)
        return new

    def _changed(self, schema: dict[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(schema)
        props = _properties(new)
        required = list(new.get("required", []))
        if self.mode == "date_format" and self.field in props:
            prop = props[self.field]
            prop.pop("format", None)
            prop["pattern"] = r"^\d{2}/\d{2}/\d{4}$"
            prop["description"] = (prop.get("description", "") + " Format: DD/MM/YYYY.").strip()
        elif self.mode == "renamed_field" and self.field in props:
            new["properties"] = {(self.new_field if k == self.field else k): v for k, v in props.items()}
            new["required"] = [self.new_field if r == self.field else r for r in required]
        elif self.mode == "type_as_string" and self.field in props:
            prop = props[self.field]
            prop["type"] = "string"
            prop.pop("minimum", None)
            prop.pop("maximum", None)
            prop["description"] = (prop.get("description", "") + ' Send the number as text, e.g. "12.5".').strip()
        elif self.mode == "new_required":
            name, value = REQUIRED_FLAG
            props[name] = {"type": "string", "const": value, "description": f'Interface version; must be "{value}".'}
            new["properties"] = props
            new["required"] = [*required, name]
        return new

    def from_original(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """A call in the original shape rewritten to the new interface (what a recovered agent sends)."""
        args = dict(arguments)
        if self.mode == "date_format" and self.field in args:
            args[self.field] = _to_day_first(args[self.field]) or args[self.field]
        elif self.mode == "renamed_field" and self.field in args:
            args[self.new_field] = args.pop(self.field)
        elif self.mode == "type_as_string" and self.field in args and not isinstance(args[self.field], str):
            args[self.field] = str(args[self.field])
        elif self.mode == "new_required":
            args[REQUIRED_FLAG[0]] = REQUIRED_FLAG[1]
        return args

    def to_original(self, arguments: dict[str, Any]) -> dict[str, Any] | Rejection:
        """Map a call in the new shape to the original arguments, or reject a call that still uses the old shape."""
        args = dict(arguments)
        if self.mode == "date_format":
            value = args.get(self.field)
            if value is None:
                return args
            converted = _from_day_first(value)
            if converted is None:
                example = _to_day_first(value) or "31/12/2026"
                return Rejection(
                    f"Invalid argument '{self.field}': {value!r} is not in the expected date format.",
                    f"This tool now expects dates as DD/MM/YYYY, e.g. {example!r}.",
                )
            args[self.field] = converted
            return args
        if self.mode == "renamed_field":
            if self.field in args:
                return Rejection(
                    f"Invalid arguments: unexpected argument '{self.field}'; missing required argument "
                    f"'{self.new_field}'.",
                    f"The argument '{self.field}' is now called '{self.new_field}'.",
                )
            if self.new_field in args:
                args[self.field] = args.pop(self.new_field)
            return args
        if self.mode == "type_as_string":
            value = args.get(self.field)
            if value is None:
                return args
            if not isinstance(value, str):
                return Rejection(
                    f"Invalid argument '{self.field}': wrong type.",
                    f"Send '{self.field}' as text, e.g. \"{value}\".",
                )
            try:
                args[self.field] = float(value) if "." in value or "e" in value.lower() else int(value)
            except ValueError:
                return Rejection(f"Invalid argument '{self.field}': {value!r} is not a number.")
            return args
        name, expected = REQUIRED_FLAG
        if args.get(name) != expected:
            got = "missing" if name not in args else f"{args.get(name)!r} is not accepted"
            return Rejection(
                f"Invalid arguments: required argument '{name}' {got}.",
                f'Pass {name}="{expected}" with every call.',
            )
        args.pop(name)
        return args


def _from_day_first(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.strptime(value.strip(), "%d/%m/%Y").date().isoformat()
    except ValueError:
        return None


def _to_day_first(value: Any) -> str | None:
    try:
        return dt.date.fromisoformat(str(value)).strftime("%d/%m/%Y")
    except ValueError:
        return None


def pick_change(
    hazard: Hazard, tool: str, seed: int, modes_allowed: tuple[ChangeMode, ...] = MODES
) -> ArgumentChange | None:
    """The change for `tool`: the declared mode and field, or a deterministic choice among those that apply."""
    spec = hazard.changeable(tool) if isinstance(hazard, ChangesInterface) else None
    if spec is None:
        return None
    params: ChangeParams = hazard.params  # type: ignore[assignment]
    modes: list[ChangeMode]
    if params.mode:
        modes = [params.mode]
    elif params.field:  # a field without a mode: only the modes that can change that field, whatever the seed
        modes = [m for m in modes_allowed if params.field in candidate_fields(spec, m) or m == "new_required"]
    else:
        modes = [m for m in modes_allowed if candidate_fields(spec, m)]
    if not modes:
        return None
    mode = choose(modes, seed, hazard.scenario.id, hazard.task.id, tool, hazard.salt, "mode")
    return ArgumentChange.pick(spec, mode, params.field, seed, hazard.scenario.id, hazard.task.id, tool, hazard.salt)

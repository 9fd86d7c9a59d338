"""Check tool arguments against a JSON Schema and say what is wrong in one short line, naming the field."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

MAX_MESSAGE_CHARS = 240


def _short(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_value(value: Any, limit: int = 60) -> str:
    """A value as a user should see it inside an error: JSON, cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _short(text, limit)


class SchemaCache:
    """Validators built once per schema; schemas are identified by the id of the dict that holds them.

    An entry keeps its schema alive (so the id cannot be reused by another dict), and only the `size` most recently
    used stay: a long-running server that meets new schema objects (a drifted interface, say) must not grow."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._validators: OrderedDict[int, tuple[dict[str, Any], Draft202012Validator]] = OrderedDict()

    def validator(self, schema: dict[str, Any]) -> Draft202012Validator:
        key = id(schema)
        cached = self._validators.get(key)
        if cached is None or cached[0] is not schema:
            cached = (schema, Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER))
            self._validators[key] = cached
            if len(self._validators) > self.size:
                self._validators.popitem(last=False)
        self._validators.move_to_end(key)
        return cached[1]

    def __len__(self) -> int:
        return len(self._validators)


_cache = SchemaCache()


def argument_problem(schema: dict[str, Any], arguments: Any) -> str | None:
    """None when `arguments` fit `schema`, else one line such as "argument 'date': 5 is not of type 'string'"."""
    error = best_match(_cache.validator(schema).iter_errors(arguments))
    if error is None:
        return None
    return _describe(error)


def _describe(error: jsonschema.ValidationError) -> str:
    field = ".".join(str(part) for part in error.absolute_path)
    where = f"argument '{field}'" if field else "arguments"
    validator = error.validator
    if validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return _short(f"{where}: missing required argument '{missing}'")
    if validator == "additionalProperties":
        return _short(f"{where}: {error.message}")
    if validator == "type":
        return _short(f"{where}: {describe_value(error.instance)} is not of type {error.validator_value!r}")
    if validator == "enum":
        return _short(f"{where}: {describe_value(error.instance)} is not one of {error.validator_value!r}")
    if validator in ("maxLength", "minLength", "maximum", "minimum", "pattern", "format", "const"):
        return _short(
            f"{where}: {describe_value(error.instance)} does not satisfy {validator} {error.validator_value!r}"
        )
    return _short(f"{where}: {error.message}")


def schema_problem(schema: Any) -> str | None:
    """None when `schema` is a valid JSON Schema (2020-12), else why not."""
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = ".".join(str(p) for p in exc.absolute_path)
        return _short(f"not a valid JSON Schema{f' at {path}' if path else ''}: {exc.message}")
    return None

"""Check tool arguments against a JSON Schema and say what is wrong in one short line, naming the field.

Two guards keep one hostile call from stalling a server that plays many episodes: `bounds_problem` refuses arguments
over fixed size limits before anything looks inside them, and the validator matches every regex with RE2 (linear
time) instead of Python's backtracking `re` (patterns.py says why). A third keeps a schema from reaching outside
itself: every validator is built with a registry that never retrieves a `$ref`, and counts the references it follows
(schema_refs.py says why).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError, best_match
from referencing.exceptions import Unresolvable

from mcp_hazard.json_text import compact
from mcp_hazard.scenario.patterns import PatternError, compile_pattern, search
from mcp_hazard.scenario.schema_check import Check, compile_check
from mcp_hazard.scenario.schema_refs import BUDGET, COUNTED_REFS, NO_RETRIEVAL, RefsTooCostly

MAX_MESSAGE_CHARS = 240

# Limits on one call's arguments, checked before validation, hazards or behaviours see them. Generous for any real
# tool call (the shipped scenarios use well under 1 KiB), small enough that validating, tracing and matching a call
# costs little. docs: /tmp/security-patterns.md, later docs/security.md.
MAX_ARGUMENT_BYTES = 64 * 1024  # the arguments as compact JSON, UTF-8
MAX_STRING_CHARS = 16 * 1024  # any one string, keys included
MAX_NESTING_DEPTH = 32  # objects and arrays inside each other, the arguments object itself counted
MAX_ITEMS = 10_000  # values in all objects and arrays together


def _short(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_value(value: Any, limit: int = 60) -> str:
    """A value as a user should see it inside an error: JSON, cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _short(text, limit)


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Any:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _re2_pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _re2_additional_properties(validator: Any, extra: Any, instance: Any, schema: dict[str, Any]) -> Any:
    """jsonschema's own, with the `patternProperties` exemption matched by RE2 (the library uses `re.search`)."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key for key in instance if key not in properties and not any(search(pattern, key) for pattern in patterns)
    ]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        if patterns:
            joined = ", ".join(repr(key) for key in sorted(extras))
            listed = ", ".join(repr(pattern) for pattern in sorted(patterns))
            yield ValidationError(
                f"{joined} {'does' if len(extras) == 1 else 'do'} not match any of the regexes: {listed}"
            )
        else:
            names = ", ".join(repr(key) for key in sorted(extras, key=str))
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _re2_is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        compile_pattern(instance)
    return True


def _format_checker() -> FormatChecker:
    """Draft 2020-12's format checks, with `format: regex` judged by what RE2 compiles (the library compiles the
    agent's string with Python's `re`)."""
    checker = FormatChecker(Draft202012Validator.FORMAT_CHECKER.checkers)
    checker.checkers = dict(checker.checkers)
    checker.checks("regex", raises=PatternError)(_re2_is_regex)
    return checker


# Draft 2020-12 with every keyword that runs a regex on instance data rewired to RE2, and `$ref`/`$dynamicRef`
# counted. `unevaluatedProperties` still evaluates `patternProperties` with `re` inside jsonschema, so load.py
# refuses schemas that combine the two. Built only by `validator_for`, with a registry that never retrieves.
Re2Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _re2_pattern,
        "patternProperties": _re2_pattern_properties,
        "additionalProperties": _re2_additional_properties,
        **COUNTED_REFS,
    },
)
FORMAT_CHECKER = _format_checker()


def validator_for(schema: dict[str, Any]) -> Any:
    """The validator for `schema`: a `$ref` it does not hold (a file, a URL, a relative path) is unresolvable,
    never fetched (schema_refs.NO_RETRIEVAL), whoever wrote the schema. Every validator of the package is this one."""
    return Re2Validator(schema, format_checker=FORMAT_CHECKER, registry=NO_RETRIEVAL)


def _named(path: tuple[str | int, ...]) -> str:
    return f"argument '{_short('.'.join(str(part) for part in path), 80)}'" if path else "arguments"


def bounds_problem(arguments: Any) -> str | None:
    """None when `arguments` are within the limits above, else one line naming the limit (and the argument, when one
    is to blame), such as "argument 'city': 20000 characters exceed the limit of 16384 characters per string".
    Iterative and stops at the first excess, so its own cost is bounded by the limits, not by the input.

    Every call is measured, and nearly every call is well within the limits: `_within` says so without keeping the
    path to each value; only a call it cannot pass is walked again to name what is wrong."""
    if (type(arguments) is dict and _flat_within(arguments)) or _within(arguments):
        return None
    return _excess(arguments)


_SCALARS = (int, float, bool, type(None))


def _flat_within(arguments: dict[Any, Any]) -> bool | None:
    """The common call, an object of ASCII text and plain numbers, judged in one pass: each value's JSON text is at
    most six bytes a character (escapes) plus room for quotes, so a small sum is proof enough. None: not that call."""
    if len(arguments) > 256:
        return None
    size = 2
    for key, value in arguments.items():
        kind = type(value)
        if type(key) is not str or not key.isascii():
            return None
        if kind is str:
            if not value.isascii():
                return None
            size += 6 * (len(key) + len(value)) + 6
        elif kind is int:
            if not -(10**15) < value < 10**15:
                return None
            size += 6 * len(key) + 24
        elif kind is float or kind is bool or value is None:
            size += 6 * len(key) + 32
        else:
            return None
    return True if size <= MAX_ARGUMENT_BYTES else None


def _within(arguments: Any) -> bool:
    """True when `arguments` are certainly within every limit; False also when not sure."""
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    items = chars = 0
    while stack:
        value, depth = stack.pop()
        kind = type(value)
        if kind is str:
            chars += len(value)
            if len(value) > MAX_STRING_CHARS or chars > MAX_ARGUMENT_BYTES:
                return False
        elif kind is dict:
            items += len(value)
            if depth >= MAX_NESTING_DEPTH or items > MAX_ITEMS:
                return False
            for key, item in value.items():
                if type(key) is not str or len(key) > MAX_STRING_CHARS:
                    return False
                chars += len(key)
                stack.append((item, depth + 1))
        elif kind is list:
            items += len(value)
            if depth >= MAX_NESTING_DEPTH or items > MAX_ITEMS:
                return False
            stack.extend((item, depth + 1) for item in value)
        elif kind not in _SCALARS:
            return False
    if chars > MAX_ARGUMENT_BYTES:
        return False
    text = compact(arguments)  # None for a lone surrogate or anything orjson and json might size differently
    return text is not None and len(text) <= MAX_ARGUMENT_BYTES


def _excess(arguments: Any) -> str | None:
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(arguments, ())]
    items = chars = 0
    too_large = f"arguments: more than the limit of {MAX_ARGUMENT_BYTES} bytes in all (as JSON)"
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if len(value) > MAX_STRING_CHARS:
                return f"{_named(path)}: {len(value)} characters exceed the limit of {MAX_STRING_CHARS} per string"
            chars += len(value)
            if chars > MAX_ARGUMENT_BYTES:  # a lower bound on the JSON size: no need to serialise a huge call
                return too_large
            continue
        if not isinstance(value, dict | list):
            continue
        if len(path) >= MAX_NESTING_DEPTH:
            return f"{_named(path)}: nested deeper than the limit of {MAX_NESTING_DEPTH} levels"
        items += len(value)
        if items > MAX_ITEMS:
            return f"arguments: more than the limit of {MAX_ITEMS} values in all"
        if isinstance(value, dict):
            for key, item in value.items():
                if len(str(key)) > MAX_STRING_CHARS:
                    return (
                        f"{_named(path)}: a key of {len(str(key))} characters exceeds the limit of {MAX_STRING_CHARS}"
                    )
                chars += len(str(key))
                stack.append((item, (*path, key)))
        else:
            stack.extend((item, (*path, i)) for i, item in enumerate(value))
        if chars > MAX_ARGUMENT_BYTES:
            return too_large
    try:
        size = len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except UnicodeEncodeError:
        return "arguments: a lone surrogate (\\ud800 to \\udfff) is not valid Unicode text"
    except (TypeError, ValueError):
        return "arguments: not JSON data"
    if size > MAX_ARGUMENT_BYTES:
        return too_large
    return None


class SchemaCache:
    """What it takes to judge instances of a schema, built once per schema: jsonschema's validator (which words the
    errors) and the compiled check (schema_check.py) that passes a valid instance without it. Schemas are identified
    by the id of the dict that holds them.

    An entry keeps its schema alive (so the id cannot be reused by another dict). A long-running server that meets new
    schema objects (a drifted interface, say) must not grow, so entries live in two generations of `size`: when the
    recent one is full it becomes the older one and the one before it is dropped, and an entry found in the older one
    moves back to the recent one. So the `size` most recently used always stay and at most twice that are kept, and a
    hit (both checks of every call) is one lookup in a plain dict, where a strict LRU's ordered dict also moved the
    entry to its end (about 4,000 instructions a call more, by callgrind)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self.recent: dict[int, tuple[dict[str, Any], Any, Check | None]] = {}
        self._older: dict[int, tuple[dict[str, Any], Any, Check | None]] = {}

    def entry(self, schema: dict[str, Any]) -> tuple[dict[str, Any], Any, Check | None]:
        key = id(schema)
        cached = self.recent.get(key)
        if cached is not None and cached[0] is schema:
            return cached
        cached = self._older.get(key)
        if cached is None or cached[0] is not schema:
            validator = validator_for(schema)
            cached = (schema, validator, compile_check(schema, FORMAT_CHECKER))
        if len(self.recent) >= self.size:
            self._older, self.recent = self.recent, {}
        self.recent[key] = cached
        return cached

    def validator(self, schema: dict[str, Any]) -> Any:
        return self.entry(schema)[1]

    def __len__(self) -> int:
        return len(self.recent.keys() | self._older.keys())


_cache = SchemaCache()


def argument_problem(schema: dict[str, Any], arguments: Any) -> str | None:
    """None when `arguments` fit `schema`, else one line such as "argument 'date': 5 is not of type 'string'".
    A valid call is passed by the compiled check alone; jsonschema looks only at what that check cannot pass."""
    cached = _cache.recent.get(id(schema))  # the hit, inline: every call checks twice
    if cached is None or cached[0] is not schema:
        cached = _cache.entry(schema)
    _, validator, check = cached
    if check is not None and check(arguments):
        return None
    BUDGET.start()
    try:
        error = best_match(validator.iter_errors(arguments))
    except Unresolvable as exc:  # a schema no load checked (an upstream server's): one line, nothing fetched
        return _short(f"{_named(())}: cannot be checked: the schema's $ref {str(exc.ref)!r} cannot be resolved "
                      "(only refs inside the schema are followed)")  # fmt: skip
    except (RefsTooCostly, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, RefsTooCostly) else "its $refs loop without end"
        return _short(f"{_named(())}: cannot be checked against the schema: {reason}")
    finally:
        BUDGET.stop()
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
    """None when `schema` is a valid JSON Schema (2020-12), else why not. Checking against the 2020-12 meta-schema
    costs about 0.7 ms a schema, and a process that loads scenarios again and again (a server's, a generator's, a
    test run's) meets the same schemas each time: the verdict is kept by the schema's JSON text."""
    key = compact(schema)
    if key is not None and len(key) > 4096:  # kept only for schemas of a usual size: at most 16 MiB in all
        key = None
    if key is not None and key in _SCHEMA_PROBLEMS:
        return _SCHEMA_PROBLEMS[key]
    problem = None
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = ".".join(str(p) for p in exc.absolute_path)
        problem = _short(f"not a valid JSON Schema{f' at {path}' if path else ''}: {exc.message}")
    if key is not None:
        if len(_SCHEMA_PROBLEMS) >= 4096:  # bounded: dropped whole when full
            _SCHEMA_PROBLEMS.clear()
        _SCHEMA_PROBLEMS[key] = problem
    return problem


_SCHEMA_PROBLEMS: dict[bytes, str | None] = {}

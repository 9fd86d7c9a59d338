"""A JSON Schema compiled once into plain Python checks that say quickly when an instance is certainly valid.

Every tool call checks its arguments against the input schema and its result against the output schema. jsonschema
walks a schema anew for every instance (a validator object per keyword and level), which cost more than the tool's
own work. A compiled check is a tree of closures over the keywords the schemas of tool interfaces use: `type`,
`properties`, `required`, `additionalProperties`, `patternProperties`, `enum`, `const`, bounds on numbers, strings,
arrays and objects, `pattern` and `format` (both as jsonschema judges them here: RE2, the same format checker),
`items`, `anyOf` and `allOf`.

It answers one question only: is this instance valid? True is a promise, exactly as jsonschema would judge it; False
means "invalid, or not sure" (a keyword it does not compile, a value of a type JSON does not have), and the caller
then asks jsonschema, which also words the error. So a compiled check can only make a valid call cheaper; it never
changes a verdict (tests/scenario/test_schema_check.py compares it with jsonschema on generated schemas and values).
Nothing is generated as source code: a stranger's schema is data, never code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from mcp_hazard.scenario.patterns import PatternError, matcher, search

Check = Callable[[Any], bool]

_JSON_TYPES = (str, int, float, bool, type(None), list, dict)
_ASSERTING = frozenset(Draft202012Validator.VALIDATORS)
"""Keywords jsonschema acts on; any other keyword is an annotation it ignores (description, title, $schema...)."""
_COMPILED = frozenset({
    "type", "properties", "required", "additionalProperties", "patternProperties", "enum", "const",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "format",
    "items", "minItems", "maxItems", "minProperties", "maxProperties", "anyOf", "allOf",
})  # fmt: skip


def compile_check(schema: Any, format_checker: FormatChecker) -> Check | None:
    """A check for `schema`, or None when it uses a keyword that only jsonschema can judge ($ref, oneOf, not...)."""
    try:
        return _compile(schema, format_checker)
    except _Unsupported:
        return None


class _Unsupported(Exception):
    pass


def _always(instance: Any) -> bool:
    return True


def _never(instance: Any) -> bool:
    return False


def _compile(schema: Any, formats: FormatChecker) -> Check:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, dict):
        raise _Unsupported
    for keyword in schema:
        if keyword in _ASSERTING and keyword not in _COMPILED:
            raise _Unsupported
    declared = schema.get("type")
    # A single declared type folds into its kind's own check (which then refuses every other type): one closure
    # where there would be two, for the schemas of nearly every tool.
    objects = _object(schema, formats, declared == "object")
    strings = _string(schema, declared == "string")
    folded = (declared == "object" and objects is not None) or (declared == "string" and strings is not None)
    checks = [
        check
        for check in (
            None if folded else _type(declared),
            objects,
            strings,
            _number(schema),
            _array(schema, formats),
            _format(schema, formats),
            _choices(schema),
            _combined(schema, formats),
        )
        if check is not None
    ]
    return _all(checks)


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def every(instance: Any) -> bool:
        for check in frozen:  # noqa: SIM110 - a loop, not all() over a generator: this runs on every call
            if not check(instance):
                return False
        return True

    return every


# -- type -------------------------------------------------------------------------------------------------------


def _is_integer(instance: Any) -> bool:
    kind = type(instance)
    return kind is int or (kind is float and instance.is_integer())


_TYPE_TESTS: dict[str, Check] = {
    "string": lambda instance: type(instance) is str,
    "object": lambda instance: type(instance) is dict,
    "array": lambda instance: type(instance) is list,
    "boolean": lambda instance: type(instance) is bool,
    "null": lambda instance: instance is None,
    "number": lambda instance: type(instance) is int or type(instance) is float,
    "integer": _is_integer,
}


def _type(declared: Any) -> Check | None:
    if declared is None:
        return None
    if isinstance(declared, str):
        if declared not in _TYPE_TESTS:
            raise _Unsupported
        return _TYPE_TESTS[declared]
    if not isinstance(declared, list) or not all(isinstance(name, str) and name in _TYPE_TESTS for name in declared):
        raise _Unsupported
    tests = tuple(_TYPE_TESTS[name] for name in declared)
    return lambda instance: any(test(instance) for test in tests)


# -- objects ----------------------------------------------------------------------------------------------------


def _object(schema: dict[str, Any], formats: FormatChecker, only: bool) -> Check | None:
    """`only`: the schema declares type object, so anything else is invalid."""
    keys = ("properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties")
    if not any(key in schema for key in keys):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    patterns = schema.get("patternProperties", {})
    extra = schema.get("additionalProperties", True)
    low, high = schema.get("minProperties"), schema.get("maxProperties")
    if not (isinstance(properties, dict) and isinstance(required, list) and isinstance(patterns, dict)):
        raise _Unsupported
    if not all(isinstance(name, str) for name in required) or not _bounds(low, high):
        raise _Unsupported
    known: dict[str, Any] = {name: _kinds_only(sub) or _compile(sub, formats) for name, sub in properties.items()}
    by_pattern = [(pattern, _compile(sub, formats)) for pattern, sub in patterns.items()]
    extra_check = None if extra is True else _compile(extra, formats)
    needed, counts = tuple(required), (low, high)
    if not by_pattern:
        return _plain_object(only, needed, counts, known, extra_check)
    return _patterned_object(only, needed, counts, known, by_pattern, extra_check)


def _plain_object(
    only: bool, needed: tuple[str, ...], counts: tuple[Any, Any], known: dict[str, Any], extra_check: Check | None
) -> Check:
    """An object check without patternProperties: the common case, kept lean (a property whose schema only names
    types is checked by a set lookup, no call)."""
    low, high = counts

    def plain(instance: Any) -> bool:
        if type(instance) is not dict:
            return not only and not isinstance(instance, dict)  # a dict subclass: let jsonschema judge it
        for name in needed:
            if name not in instance:
                return False
        if (low is not None and len(instance) < low) or (high is not None and len(instance) > high):
            return False
        for name, value in instance.items():
            sub = known.get(name)
            if sub is None:
                if extra_check is not None and not extra_check(value):
                    return False
            elif sub.__class__ is frozenset:
                if value.__class__ not in sub:
                    return False
            elif not sub(value):
                return False
        return True

    return plain


def _patterned_object(
    only: bool, needed: tuple[str, ...], counts: tuple[Any, Any], known: dict[str, Any],
    by_pattern: list[tuple[Any, Check]], extra_check: Check | None,
) -> Check:  # fmt: skip
    """An object check with patternProperties: a name matching a pattern is checked by that pattern's schema too."""
    low, high = counts

    def check(instance: Any) -> bool:
        if type(instance) is not dict:
            return not only and not isinstance(instance, dict)
        for name in needed:
            if name not in instance:
                return False
        if (low is not None and len(instance) < low) or (high is not None and len(instance) > high):
            return False
        for name, value in instance.items():
            sub = known.get(name)
            matched = False
            if by_pattern:
                if type(name) is not str:
                    return False
                for pattern, pattern_check in by_pattern:
                    try:
                        hit = search(pattern, name)
                    except PatternError:
                        return False
                    if hit:
                        matched = True
                        if not pattern_check(value):
                            return False
            if sub is not None:
                if not sub(value):
                    return False
            elif extra_check is not None and not matched and not extra_check(value):
                return False
        return True

    return check


_KINDS: dict[str, frozenset[type]] = {
    "string": frozenset({str}), "object": frozenset({dict}), "array": frozenset({list}), "boolean": frozenset({bool}),
    "null": frozenset({type(None)}), "number": frozenset({int, float}),
}  # fmt: skip


def _kinds_only(schema: Any) -> frozenset[type] | None:
    """A property schema that only declares its type (most of them), as the Python types that pass: a set lookup
    instead of a check to call. Not `integer`, which admits some floats."""
    if not isinstance(schema, dict) or not all(key == "type" or key not in _ASSERTING for key in schema):
        return None
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _KINDS for n in names):
        return None
    return frozenset().union(*(_KINDS[name] for name in names))


def _bounds(*values: Any) -> bool:
    return all(value is None or (type(value) is int and value >= 0) for value in values)


# -- strings ----------------------------------------------------------------------------------------------------


def _string(schema: dict[str, Any], only: bool) -> Check | None:
    """`only`: the schema declares type string, so anything else is invalid."""
    if not any(name in schema for name in ("minLength", "maxLength", "pattern")):
        return None
    low, high, pattern = schema.get("minLength"), schema.get("maxLength"), schema.get("pattern")
    if not _bounds(low, high) or (pattern is not None and not isinstance(pattern, str)):
        raise _Unsupported

    matches = matcher(pattern) if pattern is not None else None

    def check(instance: Any) -> bool:
        if type(instance) is not str:
            return not only and not isinstance(instance, str)
        if (low is not None and len(instance) < low) or (high is not None and len(instance) > high):
            return False
        return matches is None or matches(instance)

    return check


def _format(schema: dict[str, Any], formats: FormatChecker) -> Check | None:
    """jsonschema asks the format checker about any instance (each format's check lets other types through)."""
    if "format" not in schema:
        return None
    name = schema["format"]
    if not isinstance(name, str):
        raise _Unsupported
    if name not in formats.checkers:
        return None  # jsonschema lets an unknown format through
    return lambda instance: type(instance) in _JSON_TYPES and formats.conforms(instance, name)


# -- numbers ----------------------------------------------------------------------------------------------------


def _number(schema: dict[str, Any]) -> Check | None:
    names = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    if not any(name in schema for name in names):
        return None
    low, high, above, below = (schema.get(name) for name in names)
    for bound in (low, high, above, below):
        if bound is not None and type(bound) not in (int, float):
            raise _Unsupported

    def check(instance: Any) -> bool:
        kind = type(instance)
        if kind is not int and kind is not float:
            return kind in _JSON_TYPES  # not a number: the bounds do not apply
        if (low is not None and instance < low) or (high is not None and instance > high):
            return False
        return not ((above is not None and instance <= above) or (below is not None and instance >= below))

    return check


# -- arrays -----------------------------------------------------------------------------------------------------


def _array(schema: dict[str, Any], formats: FormatChecker) -> Check | None:
    if not any(name in schema for name in ("items", "minItems", "maxItems")):
        return None
    low, high = schema.get("minItems"), schema.get("maxItems")
    if not _bounds(low, high):
        raise _Unsupported
    each = _compile(schema["items"], formats) if "items" in schema else None

    def check(instance: Any) -> bool:
        if type(instance) is not list:
            return not isinstance(instance, list)
        if (low is not None and len(instance) < low) or (high is not None and len(instance) > high):
            return False
        if each is not None:
            for item in instance:
                if not each(item):
                    return False
        return True

    return check


# -- enum, const, anyOf, allOf ----------------------------------------------------------------------------------


def _choices(schema: dict[str, Any]) -> Check | None:
    if "enum" not in schema and "const" not in schema:
        return None
    checks: list[Check] = []
    if "enum" in schema:
        members = schema["enum"]
        if not isinstance(members, list):
            raise _Unsupported
        checks.append(lambda instance: any(_equal(member, instance) for member in members))
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda instance: _equal(const, instance))
    return _all(checks)


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's equality (`true` is not 1, 1 is 1.0, containers compared item by item) over JSON's own types;
    False for anything else, which jsonschema then judges."""
    if type(one) not in _JSON_TYPES or type(two) not in _JSON_TYPES:
        return False
    if one is two:
        return True
    if type(one) is str or type(two) is str:
        return bool(one == two)
    if type(one) is list and type(two) is list:
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if type(one) is dict and type(two) is dict:
        return len(one) == len(two) and all(key in two and _equal(value, two[key]) for key, value in one.items())
    if type(one) is bool or type(two) is bool:
        return type(one) is type(two) and one == two
    if isinstance(one, list | dict) or isinstance(two, list | dict):
        return False
    return bool(one == two)


def _any(subs: tuple[Check, ...]) -> Check:
    return lambda instance: any(sub(instance) for sub in subs)


def _combined(schema: dict[str, Any], formats: FormatChecker) -> Check | None:
    checks: list[Check] = []
    for keyword in ("anyOf", "allOf"):
        if keyword not in schema:
            continue
        subschemas = schema[keyword]
        if not isinstance(subschemas, list) or not subschemas:
            raise _Unsupported
        subs = tuple(_compile(sub, formats) for sub in subschemas)
        if keyword == "anyOf":
            checks.append(_any(subs))
        else:
            checks.append(_all(list(subs)))
    return _all(checks) if checks else None

"""The compiled check of a JSON Schema agrees with jsonschema: what it passes is valid, what it cannot pass is judged
by jsonschema. On JSON values and the keywords it compiles it must agree exactly, else valid calls go the slow way."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_hazard.scenario.arguments import FORMAT_CHECKER, Re2Validator, argument_problem
from mcp_hazard.scenario.schema_check import compile_check

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.sampled_from([0.0, 1.0, 2.5, -1.5, 3.0, float("inf"), float("nan")]),
    st.sampled_from(["", "a", "ab", "AU-412", "2026-03-14", "2026-13-45", "x" * 5, "true", "1"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c", "x1"]), inner, max_size=3)
    ),
    max_leaves=8,
)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])
BOUND = st.one_of(st.none(), st.integers(min_value=0, max_value=3))


def _schemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    def build(parts: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in parts.items() if value is not None}

    keywords = st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3, unique=True)),
            "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            "required": st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=2),
            "additionalProperties": st.one_of(st.booleans(), inner),
            "patternProperties": st.dictionaries(st.sampled_from(["^x", "[0-9]$"]), inner, max_size=1),
            "enum": st.lists(SCALARS, min_size=1, max_size=3),
            "const": SCALARS,
            "minimum": st.integers(-2, 2),
            "maximum": st.one_of(st.integers(-2, 3), st.floats(-2, 3, allow_nan=False)),
            "exclusiveMinimum": st.integers(-2, 2),
            "exclusiveMaximum": st.integers(-1, 4),
            "minLength": BOUND,
            "maxLength": BOUND,
            "pattern": st.sampled_from(["^AU-[0-9]{3}$", "b", "^$"]),
            "format": st.sampled_from(["date", "regex", "email", "no-such-format"]),
            "items": inner,
            "minItems": BOUND,
            "maxItems": BOUND,
            "minProperties": BOUND,
            "maxProperties": BOUND,
            "anyOf": st.lists(inner, min_size=1, max_size=2),
            "allOf": st.lists(inner, min_size=1, max_size=2),
            "description": st.just("annotations are ignored"),
        },
    ).map(build)
    return keywords


SCHEMAS = st.recursive(st.one_of(st.booleans(), st.just({})), _schemas, max_leaves=6)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS, instance=VALUES)
def test_the_compiled_check_agrees_with_jsonschema(schema: Any, instance: Any) -> None:
    check = compile_check(schema, FORMAT_CHECKER)
    assert check is not None, f"a schema of compiled keywords only was not compiled: {schema}"
    valid = Re2Validator(schema, format_checker=FORMAT_CHECKER).is_valid(instance)
    assert check(instance) == valid, (schema, instance)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}},
        {"oneOf": [{"type": "string"}]},
        {"not": {"type": "string"}},
        {"type": "object", "properties": {"a": {"uniqueItems": True}}},
        {"prefixItems": [{"type": "string"}]},
    ],
)
def test_keywords_only_jsonschema_judges_leave_the_schema_to_it(schema: dict[str, Any]) -> None:
    assert compile_check(schema, FORMAT_CHECKER) is None
    for instance in ("x", 1, ["x"], {"a": "x"}):
        valid = Re2Validator(schema, format_checker=FORMAT_CHECKER).is_valid(instance)
        assert (argument_problem(schema, instance) is None) == valid, instance


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"type": "string"}, type("Text", (str,), {})("a")),  # a str subclass
        ({"enum": [dt.date(2026, 3, 14)]}, dt.date(2026, 3, 14)),  # YAML can make dates; JSON has none
        ({"minimum": 1}, __import__("decimal").Decimal("0.5")),
        ({"type": "object", "properties": {"a": {"type": "integer"}}}, type("Map", (dict,), {})(a="x")),
    ],
)
def test_values_json_does_not_have_are_left_to_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    check = compile_check(schema, FORMAT_CHECKER)
    assert check is not None and check(instance) is False
    valid = Re2Validator(schema, format_checker=FORMAT_CHECKER).is_valid(instance)
    assert (argument_problem(schema, instance) is None) == valid

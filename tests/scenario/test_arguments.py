"""Argument checks against a tool's JSON Schema: one short line that names the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_hazard.scenario.arguments import (
    MAX_MESSAGE_CHARS,
    SchemaCache,
    _excess,
    argument_problem,
    bounds_problem,
    describe_value,
    schema_problem,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "date": {"type": "string", "format": "date"},
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
        "currency": {"enum": ["EUR", "USD"]},
        "code": {"type": "string", "pattern": "^AU-[0-9]{3}$"},
        "nested": {"type": "object", "properties": {"x": {"type": "number"}}},
    },
    "required": ["date"],
    "additionalProperties": False,
}
DATE = {"date": "2026-03-14"}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "arguments: missing required argument 'date'"),
        ({"date": 5}, "argument 'date': 5 is not of type 'string'"),
        ({"date": "2026-13-45"}, "argument 'date': \"2026-13-45\" does not satisfy format 'date'"),
        ({**DATE, "n": 0}, "argument 'n': 0 does not satisfy minimum 1"),
        ({**DATE, "n": 9}, "argument 'n': 9 does not satisfy maximum 5"),
        ({**DATE, "n": 1.5}, "argument 'n': 1.5 is not of type 'integer'"),
        ({**DATE, "currency": "GBP"}, "argument 'currency': \"GBP\" is not one of ['EUR', 'USD']"),
        ({**DATE, "code": "XX"}, "argument 'code': \"XX\" does not satisfy pattern '^AU-[0-9]{3}$'"),
        ({**DATE, "nested": {"x": "a"}}, "argument 'nested.x': \"a\" is not of type 'number'"),
        ([1], "arguments: [1] is not of type 'object'"),
    ],
)
def test_argument_problem_names_the_field(arguments: Any, expected: str) -> None:
    assert argument_problem(SCHEMA, arguments) == expected


def test_valid_arguments_have_no_problem() -> None:
    assert argument_problem(SCHEMA, DATE) is None
    assert argument_problem(SCHEMA, {**DATE, "n": 3, "currency": "EUR", "code": "AU-412", "nested": {"x": 1}}) is None


def test_unexpected_argument_is_named() -> None:
    problem = argument_problem(SCHEMA, {**DATE, "extra": 1})
    assert problem is not None and problem.startswith("arguments: ") and "'extra'" in problem


def test_messages_stay_short_and_on_one_line() -> None:
    problem = argument_problem(SCHEMA, {"date": "x\n" * 5000})
    assert problem is not None
    assert len(problem) <= MAX_MESSAGE_CHARS
    assert "\n" not in problem


def test_schema_cache_follows_a_changed_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert argument_problem(schema, {"a": 1}) is not None
    other = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert argument_problem(other, {"a": 1}) is None
    assert argument_problem(schema, {"a": "x"}) is None


def test_schema_cache_keeps_only_the_most_recently_used() -> None:
    """A long-running server meets new schema objects (drifted interfaces); the cache must not grow with them, and
    what is in use stays."""
    cache = SchemaCache(size=3)
    kept = {"type": "object"}
    first = cache.validator(kept)
    others = [{"type": "object", "maxProperties": n} for n in range(10)]
    made = []
    for other in others:
        made.append(cache.validator(other))
        assert cache.validator(kept) is first  # in use, so never the one dropped
        assert len(cache) <= 6  # two generations of 3
    assert len(cache) >= 3  # the 3 most recently used always stay
    assert cache.validator(others[-1]) is made[-1]  # used a moment ago: kept
    assert cache.validator(others[0]) is not made[0]  # long unused: dropped, so built anew


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "strung"}, "at type"),
        ({"properties": {"a": {"type": 5}}}, "at properties.a.type"),
        ({"required": "a"}, "at required"),
        ([1], "not a valid JSON Schema"),
    ],
)
def test_schema_problem(schema: Any, words: str) -> None:
    problem = schema_problem(schema)
    assert problem is not None and problem.startswith("not a valid JSON Schema")
    assert words in problem


def test_valid_schemas_have_no_problem() -> None:
    assert schema_problem(SCHEMA) is None
    assert schema_problem({"type": "object"}) is None
    assert schema_problem({}) is None


def test_a_schema_judged_again_gets_the_same_verdict_as_the_first_time() -> None:
    """The verdict is kept by the schema's JSON text: asked again (a scenario loaded twice), a schema is judged
    as before; one that differs by a single value, or only by key order, is judged by its own content."""
    bad = {"type": "object", "properties": {"a": {"type": "strung"}}}
    first = schema_problem(bad)
    assert first is not None and "at properties.a.type" in first
    assert schema_problem(json.loads(json.dumps(bad))) == first
    assert schema_problem({"type": "object", "properties": {"a": {"type": "string"}}}) is None
    assert schema_problem({"properties": {"a": {"type": "strung"}}, "type": "object"}) == first
    assert schema_problem({"type": "object", "properties": {"a": {"type": "string"}}}) is None


def test_describe_value_is_json_and_cut_short() -> None:
    assert describe_value("x") == '"x"'
    assert describe_value({"a": [1, None, True]}) == '{"a": [1, null, true]}'
    assert describe_value("\u00e9") == '"\u00e9"'
    long = describe_value("y" * 500)
    assert len(long) == 60 and long.endswith("...")
    assert describe_value({1, 2}) == "{1, 2}"  # not JSON: falls back to repr instead of failing


# -- size limits: the quick pass agrees with the full walk -------------------------------------------------------------

_LONG = st.sampled_from([0, 1, 5, 16_383, 16_384, 16_385, 40_000])
_TEXT = st.one_of(
    st.text(max_size=5),
    st.builds(lambda n, c: c * n, _LONG, st.sampled_from(["a", "é", "\x00", '"', "\ud800"])),
)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _TEXT)
_ARGUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=10,
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ARGUMENTS)
def test_bounds_problem_says_what_the_full_walk_says(arguments: Any) -> None:
    assert bounds_problem(arguments) == _excess(arguments)


def test_a_flat_call_near_the_size_limit_is_measured_exactly() -> None:
    near = {f"k{i}": "x" * 16_000 for i in range(4)}  # 64,000 characters: the quick bound cannot vouch for it
    assert bounds_problem(near) is None
    over = {f"k{i}": "x" * 16_000 for i in range(5)}
    assert bounds_problem(over) == _excess(over) is not None
    assert (
        bounds_problem({"a": "\ud800"}) == "arguments: a lone surrogate (\\ud800 to \\udfff) is not valid Unicode text"
    )

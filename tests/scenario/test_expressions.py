"""The expression and template language: what it computes, what it refuses, and that it is total and deterministic."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from conftest import WAIT_S
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_hazard.scenario.expression_budget import json_text
from mcp_hazard.scenario.expression_functions import FUNCTIONS
from mcp_hazard.scenario.expressions import (
    EXPRESSION_BUDGET,
    MAX_EXPONENT,
    MAX_EXPRESSION_CHARS,
    MAX_FORMAT_WIDTH,
    MAX_INT,
    MAX_ITEMS,
    MAX_LET_DEPTH,
    MAX_TEXT_CHARS,
    MAX_VALUE_DEPTH,
    MAX_VALUE_UNITS,
    Budget,
    BudgetExceeded,
    ExpressionError,
    deepest_let,
    evaluate,
    parse_expression,
    referenced_names,
    render,
    template_expressions,
)

NAMES: dict[str, Any] = {
    "x": 7,
    "y": 2,
    "f": 2.5,
    "s": "Velmora",
    "flag": True,
    "nothing": None,
    "items": [3, 1, 2],
    "city": {"name": "Velmora", "code": "VLM", "tags": ["coast", "old"]},
    "flights": [
        {"id": "AU-412", "price": 189.0, "class": "Flex"},
        {"id": "AU-418", "price": 142.5, "class": "Saver"},
        {"id": "AU-426", "price": 167.0, "class": "Saver"},
    ],
}


def ev(source: str, names: dict[str, Any] | None = None) -> Any:
    return evaluate(source, NAMES if names is None else names)


def same(actual: Any, expected: Any) -> bool:
    """Equal and of the same JSON type (1, 1.0 and True are different answers)."""
    return json.dumps(actual, sort_keys=True) == json.dumps(expected, sort_keys=True)


# -- arithmetic, comparisons, logic --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("x - y", 5),
        ("x / y", 3.5),
        ("x // y", 3),
        ("x % y", 1),
        ("-x // y", -4),
        ("y ** 10", 1024),
        ("2 ** -1", 0.5),
        ("f * 2", 5.0),
        ("-x", -7),
        ("+x", 7),
        ("10 ** 18", MAX_INT),
        ("'a' + 'b'", "ab"),
        ("[1] + [2]", [1, 2]),
        ("x > y", True),
        ("x < y", False),
        ("x >= 7", True),
        ("x <= 6", False),
        ("x == 7", True),
        ("x != 7", False),
        ("1 < y < x", True),
        ("1 < x < y", False),
        ("'VLM' in city.code", True),
        ("'coast' in city.tags", True),
        ("'code' in city", True),
        ("'desert' not in city.tags", True),
        ("flag and x", 7),
        ("nothing or 'fallback'", "fallback"),
        ("not flag", False),
        ("not nothing", True),
        ("x > 5 and y > 5", False),
        ("x > 5 or y > 5", True),
        ("true", True),
        ("false", False),
        ("null", None),
        ("'big' if x > 5 else 'small'", "big"),
        ("'big' if y > 5 else 'small'", "small"),
        ("1 if flag else 1 / 0", 1),  # the branch not taken is not evaluated
        ("false and 1 / 0", False),  # short circuit
    ],
)
def test_operators(source: str, expected: Any) -> None:
    assert same(ev(source), expected), ev(source)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("items[0]", 3),
        ("items[-1]", 2),
        ("items[1:]", [1, 2]),
        ("items[:2]", [3, 1]),
        ("s[0]", "V"),
        ("s[0:3]", "Vel"),
        ("city['code']", "VLM"),
        ("city.code", "VLM"),
        ("city.tags[1]", "old"),
        ("flights[1].id", "AU-418"),
        ("flights[-1]['class']", "Saver"),
        ("{'a': {'b': [10, 20]}}.a.b[1]", 20),
        ("[x, y, [s]]", [7, 2, ["Velmora"]]),
        ("(x, y)", [7, 2]),
        ("{'k': x, 1: 'one'}", {"k": 7, "1": "one"}),
    ],
)
def test_indexing_and_lookup(source: str, expected: Any) -> None:
    assert same(ev(source), expected)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("city.missing", "no field 'missing'"),
        ("city['missing']", "no field 'missing'"),
        ("items[3]", "out of range"),
        ("items[-4]", "out of range"),
        ("items['a']", "whole number"),
        ("items[true]", "whole number"),
        ("x.field", "cannot look up"),
        ("nothing.field", "cannot look up"),
        ("unknown_name + 1", "unknown name 'unknown_name'"),
        ("x / 0", "ZeroDivisionError"),
        ("x % 0", "ZeroDivisionError"),
        ("x + 'a'", "TypeError"),
        ("s < 1", "TypeError"),
        ("-s", "TypeError"),
    ],
)
def test_evaluation_errors_are_expression_errors_with_a_reason(source: str, words: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        ev(source)
    assert words in str(caught.value)


# -- every function ------------------------------------------------------------------------------------------------

# scramble(...) is blake2b (7-byte digest, big-endian) of the arguments' JSON list: '[7, 512]' here.
SCRAMBLED = int.from_bytes(hashlib.blake2b(b"[7, 512]", digest_size=7).digest(), "big")
assert SCRAMBLED == 40578520527895654

FUNCTION_CASES: dict[str, list[tuple[str, Any]]] = {
    "abs": [("abs(-3)", 3), ("abs(-2.5)", 2.5)],
    "round": [("round(2.675, 2)", 2.67), ("round(2.4)", 2), ("round(3.5)", 4), ("round(x / 3, 1)", 2.3)],
    "min": [("min(3, 1, 2)", 1), ("min(items)", 1), ("min([2.5, 1.5])", 1.5)],
    "max": [("max(3, 1, 2)", 3), ("max(items)", 3)],
    "sum": [("sum(items)", 6), ("sum([])", 0), ("sum([0.5, 0.25])", 0.75)],
    "len": [("len(items)", 3), ("len(s)", 7), ("len(city)", 3), ("len('')", 0)],
    "str": [("str(5)", "5"), ("str(5.0)", "5"), ("str(2.5)", "2.5"), ("str(true)", "true"), ("str(null)", "")],
    "int": [("int('42')", 42), ("int('3.9')", 3), ("int(2.9)", 2), ("int(-2.9)", -2)],
    "float": [("float('1.5')", 1.5), ("float(2)", 2.0)],
    "fixed": [("fixed(2.5)", "2.50"), ("fixed(1 / 3, 3)", "0.333"), ("fixed(7, 0)", "7")],
    "lower": [("lower('AbC')", "abc"), ("lower(s)", "velmora")],
    "upper": [("upper('au-412')", "AU-412")],
    "strip": [("strip('  padded ')", "padded")],
    "join": [("join(', ', city.tags)", "coast, old"), ("join('-', [1, 2.0, true, null])", "1-2-true-")],
    "get": [
        ("get(city, 'code')", "VLM"),
        ("get(city, 'nope')", None),
        ("get(city, 'nope', 'dflt')", "dflt"),
        ("get(items, 1)", 1),
        ("get(items, 9, -1)", -1),
    ],
    "sorted": [("sorted(items)", [1, 2, 3]), ("sorted(['b', 'a', 'C'])", ["C", "a", "b"])],
    "sort_by": [("pluck(sort_by(flights, 'price'), 'id')", ["AU-418", "AU-426", "AU-412"])],
    "min_by": [("min_by(flights, 'price').id", "AU-418"), ("min_by([], 'price')", None)],
    "max_by": [("max_by(flights, 'price').id", "AU-412"), ("max_by([], 'price')", None)],
    "pluck": [("pluck(flights, 'class')", ["Flex", "Saver", "Saver"]), ("pluck(flights, 'nope')", [None] * 3)],
    "where": [("pluck(where(flights, 'class', 'Saver'), 'id')", ["AU-418", "AU-426"]), ("where(flights, 'x', 1)", [])],
    "add_days": [
        ("add_days('2026-03-14', 3)", "2026-03-17"),
        ("add_days('2026-02-27', 2)", "2026-03-01"),
        ("add_days('2026-03-14T10:00:00', -14)", "2026-02-28"),
    ],
    "days_between": [("days_between('2026-03-14', '2026-03-16')", 2), ("days_between('2026-03-16', '2026-03-14')", -2)],
    "weekday": [("weekday('2026-03-14')", "Saturday"), ("weekday('2026-03-16')", "Monday")],
    "floor": [("floor(2.7)", 2), ("floor(-1.2)", -2)],
    "ceil": [("ceil(1.2)", 2), ("ceil(-1.7)", -1)],
    "scramble": [("scramble(7, 512)", SCRAMBLED), ("scramble(7, 512) % 899 + 100", SCRAMBLED % 899 + 100)],
}


def test_every_function_has_cases() -> None:
    missing = sorted(set(FUNCTIONS) - set(FUNCTION_CASES))
    assert not missing, f"functions without a test case: {missing}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [case for cases in FUNCTION_CASES.values() for case in cases],
    ids=[case[0] for cases in FUNCTION_CASES.values() for case in cases],
)
def test_function(source: str, expected: Any) -> None:
    result = ev(source)
    if isinstance(expected, float):
        assert isinstance(result, float) and math.isclose(result, expected, abs_tol=1e-12), result
    else:
        assert same(result, expected), result


@pytest.mark.parametrize(
    "source",
    [
        "len(5)",
        "min(1)",
        "max([])",
        "sum(['a'])",
        "int('abc')",
        "float([1])",
        "round('x')",
        "round(true)",
        "fixed('x')",
        "join(',', 5)",
        "add_days('not a date', 1)",
        "add_days(20260314, 1)",
        "days_between('2026-03-14', 5)",
        "weekday('2026-13-01')",
        "abs('x')",
        "floor('x')",
        "add_days('2026-01-01', 1000000000)",
        "min()",
    ],
)
def test_function_misuse_is_an_expression_error(source: str) -> None:
    with pytest.raises(ExpressionError):
        ev(source)


# -- templates -----------------------------------------------------------------------------------------------------


def test_render_keeps_the_type_of_a_whole_expression() -> None:
    assert same(render("{{ x }}", NAMES), 7)
    assert same(render("{{ f }}", NAMES), 2.5)
    assert same(render("{{ flag }}", NAMES), True)
    assert render("{{ nothing }}", NAMES) is None
    assert same(render("{{ city.tags }}", NAMES), ["coast", "old"])
    assert same(render("{{ city }}", NAMES), NAMES["city"])
    assert same(render("  {{x+1}}  ", NAMES), 8)  # surrounding blanks do not turn it into text


def test_render_interpolates_mixed_text() -> None:
    assert render("Code {{ city.code }}!", NAMES) == "Code VLM!"
    assert render("{{ x }} and {{ y }}", NAMES) == "7 and 2"
    assert render("{{ x }}{{ y }}", NAMES) == "72"
    assert render("total {{ 1.0 + 1 }} EUR", NAMES) == "total 2 EUR"
    assert render("is {{ flag }}", NAMES) == "is true"
    assert render("[{{ nothing }}]", NAMES) == "[]"
    assert render("tags: {{ city.tags }}", NAMES) == 'tags: ["coast", "old"]'


def test_render_walks_lists_and_dicts_and_leaves_other_values_alone() -> None:
    template = {"a": ["{{ x }}", "n={{ y }}", 3, None, True], "b": {"c": "{{ s }}"}, "d": 1.5, "e": "plain"}
    assert same(
        render(template, NAMES), {"a": [7, "n=2", 3, None, True], "b": {"c": "Velmora"}, "d": 1.5, "e": "plain"}
    )
    assert render("no braces here", {}) == "no braces here"
    assert render(42, {}) == 42


def test_render_raises_expression_error_for_a_broken_part() -> None:
    with pytest.raises(ExpressionError, match="unknown name"):
        render("a {{ ghost }} b", NAMES)
    with pytest.raises(ExpressionError):
        render({"deep": ["{{ city.nope }}"]}, NAMES)


def test_template_expressions_finds_every_expression() -> None:
    template = {"a": "{{ x }}", "b": ["text {{ y + 1 }} and {{ s }}", 5], "c": {"d": "none"}}
    assert sorted(e.strip() for e in template_expressions(template)) == ["s", "x", "y + 1"]
    assert template_expressions(3) == []


def test_referenced_names_excludes_functions_and_literals() -> None:
    assert referenced_names("min_by(flights.flights, 'price').id") == {"flights"}
    assert referenced_names("round(a.amount * b['rate'], 2) if ok else null") == {"a", "b", "ok"}
    assert referenced_names("true or false") == set()
    # a step may be called like a function; used as a value, its name is a reference
    assert referenced_names("sorted + 1") == {"sorted"}


# -- hostile expressions -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("x.__class__", "'_'"),
        ("city.__class__.__mro__", "'_'"),
        ("city._private", "'_'"),
        ("().__class__.__base__.__subclasses__()", ""),
        ("lambda: 1", "Lambda"),
        ("(lambda: 1)()", ""),
        ("[i for i in items]", "ListComp"),
        ("{i for i in items}", ""),
        ("{k: 1 for k in items}", ""),
        ("sum(i for i in items)", ""),
        ("__import__('os').system('true')", "unknown function"),
        ("import os", "cannot parse"),
        ("open('/etc/passwd')", "unknown function"),
        ("eval('1')", "unknown function"),
        ("getattr(x, 'real')", "unknown function"),
        ("city.get('code')", "unknown function"),
        ("round(2.5, ndigits=1)", "keyword arguments"),
        ("min(*items)", ""),
        ("{**city}", ""),
        ("(y := 3)", ""),
        ("f'{x}'", ""),
        ("x if (y := 1) else 2", ""),
        ("items[::2]", "step"),
        ("1j", ""),
        ("b'bytes'", ""),
        ("...", ""),
        ("x @ y", ""),
        ("x << 2", ""),
        ("x & 1", ""),
        ("~x", ""),
        ("x is None", ""),
        ("await x", ""),
        ("yield x", ""),
        ("a" * (MAX_EXPRESSION_CHARS + 1), "longer than"),
        ("", "cannot parse"),
        ("1 +", "cannot parse"),
    ],
)
def test_hostile_or_unsupported_expressions_are_rejected_at_parse_time(source: str, words: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        parse_expression(source)
    assert words in str(caught.value)
    with pytest.raises(ExpressionError):
        evaluate(source, NAMES)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("2 ** 65", f"exponent larger than {MAX_EXPONENT}"),
        ("2 ** -65", f"exponent larger than {MAX_EXPONENT}"),
        ("10 ** 1000000", f"exponent larger than {MAX_EXPONENT}"),
        ("(10 ** 18) ** 64 ** 64", "larger than"),
        ("2 ** 64", f"larger than {MAX_INT}"),
        ("10 ** 18 + 1", f"larger than {MAX_INT}"),
        ("-(10 ** 18) - 1", f"larger than {MAX_INT}"),
        ("9" * 500, f"larger than {MAX_INT}"),
        ("int(1e300)", f"larger than {MAX_INT}"),
        ("floor(1e300)", f"larger than {MAX_INT}"),
        ("'ab' * 3", "repeating"),
        ("3 * 'ab'", "repeating"),
        ("[0] * 100000000", "repeating"),
        ("s * 1000000000", "repeating"),
        ("float('inf')", "finite"),
        ("float('nan')", "finite"),
        ("1e308 * 10", "finite"),
        ("1e308 ** 2", ""),
        ("(-8) ** 0.5", ""),
        ("-8 ** 0.5 + (x - 15) ** 0.5", ""),
        ("fixed(1, 200000)", "number of digits"),
        ("fixed(1, 10 ** 18)", ""),
    ],
)
def test_expensive_or_non_json_results_are_refused(source: str, words: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        ev(source)
    assert words in str(caught.value)


def test_text_and_list_growth_by_addition_is_bounded() -> None:
    big = "a" * MAX_TEXT_CHARS
    with pytest.raises(ExpressionError, match="longer than"):
        evaluate("t + 'b'", {"t": big})
    with pytest.raises(ExpressionError, match="more than"):
        evaluate("l + [1]", {"l": [0] * MAX_ITEMS})
    with pytest.raises(ExpressionError, match=f"over the limit of {MAX_VALUE_UNITS:,} for one value"):
        evaluate("join(t, l)", {"t": "x" * 1000, "l": [1] * 1000})  # refused before it is joined


@pytest.mark.parametrize(
    "source",
    [
        "+".join(["1"] * 999),  # a left-leaning chain of 998 additions
        "-" * (MAX_EXPRESSION_CHARS - 1) + "1",
        "x" + ".y" * 999,
        "not " * 499 + "1",
    ],
    ids=["long-sum", "many-minus", "long-attribute-chain", "many-not"],
)
def test_long_but_allowed_expressions_never_raise_recursion_error(source: str) -> None:
    """Anything under MAX_EXPRESSION_CHARS must evaluate or fail with ExpressionError, never RecursionError."""
    assert len(source) <= MAX_EXPRESSION_CHARS
    names = {"x": {"y": None}}
    with contextlib.suppress(ExpressionError):
        evaluate(source, names)


def _evaluate_in_subprocess(source: str, cpu_s: int) -> subprocess.CompletedProcess[str] | None:
    """Evaluate in a child process limited to `cpu_s` seconds of CPU (a runaway computation is killed by the kernel,
    whatever the load: CPU time, unlike wall time, does not stretch on a busy machine); None when the child did not
    end within the hang guard."""
    code = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        resource.setrlimit(resource.RLIMIT_CPU, ({cpu_s}, {cpu_s}))
        from mcp_hazard.scenario.expressions import ExpressionError, evaluate
        try:
            result = evaluate({source!r}, {{}})
        except ExpressionError as exc:
            print("ExpressionError:", exc)
        else:
            print("result:", repr(result)[:80])
        """
    )
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.parametrize(
    "source",
    ["fixed(1, 999999999)", "round(5, -1000000000000000000)", "round(5, -10000000)"],
    ids=["fixed-huge-precision", "round-huge-negative-digits", "round-large-negative-digits"],
)
def test_short_expressions_cannot_burn_time_or_memory(source: str) -> None:
    """'No expression can exhaust memory or time': each of these is a few characters long and must fail fast."""
    done = _evaluate_in_subprocess(source, cpu_s=2)
    assert done is not None, f"evaluating {source!r} did not end within {WAIT_S:g} s"
    assert done.returncode == 0, f"evaluating {source!r} used more than 2 s of CPU (exit {done.returncode})"
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith(("ExpressionError", "result:")), (done.stdout, done.stderr)


# -- totality and determinism --------------------------------------------------------------------------------------

PROPERTY_EXPRESSIONS = [
    "x + y",
    "x - y",
    "x * y",
    "x / y",
    "x // y",
    "x % y",
    "x ** y",
    "x ** (y % 70 - 35)",
    "-x",
    "abs(x)",
    "x < y",
    "x == y",
    "x if x > y else y",
    "round(x / 7, 2)",
    "round(x, y % 20 - 10)",
    "str(x)",
    "int(str(x))",
    "float(x)",
    "fixed(x / 3, 2)",
    "add_days('2026-01-01', x)",
    "days_between('2026-01-01', add_days('2026-01-01', y))",
    "weekday(add_days('2026-01-01', x))",
    "[x, y][x]",
    "get([x, y], y)",
    "min(x, y)",
    "max([x, y])",
    "sum([x, y, 0.5])",
    "len(str(x))",
    "x in [y]",
    "sorted([x, y])",
    "floor(x / 2)",
    "ceil(x / 3)",
    "{'k': x}.k",
    "'abc'[x:y]",
    "x ** 0.5",
    "(x - y) ** 0.5",
    "x / y ** 2",
    "join(',', [x, y])",
]


def _json_value(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return value is None or isinstance(value, str | int | float | bool | list | dict)


@settings(max_examples=300, deadline=None, database=None)
@given(source=st.sampled_from(PROPERTY_EXPRESSIONS), x=st.integers(), y=st.integers())
def test_evaluation_is_total_deterministic_and_json(source: str, x: int, y: int) -> None:
    names = {"x": x, "y": y}
    outcomes = []
    for _ in range(2):
        try:
            value = evaluate(source, dict(names))
        except ExpressionError as exc:
            outcomes.append(("error", str(exc)))
        else:
            assert _json_value(value), f"{source} with x={x}, y={y} gave a non-JSON value {value!r}"
            outcomes.append(("value", json.dumps(value, sort_keys=True)))
    assert outcomes[0] == outcomes[1]
    assert names == {"x": x, "y": y}  # evaluation never mutates its inputs


@settings(max_examples=150, deadline=None, database=None)
@given(x=st.integers(min_value=-(10**6), max_value=10**6), y=st.integers(min_value=1, max_value=10**6))
def test_arithmetic_agrees_with_python_on_small_integers(x: int, y: int) -> None:
    names = {"x": x, "y": y}
    assert evaluate("x + y", names) == x + y
    assert evaluate("x * y", names) == x * y
    assert evaluate("x // y", names) == x // y
    assert evaluate("x % y", names) == x % y
    assert evaluate("x / y", names) == x / y
    assert evaluate("x if x > y else y", names) == max(x, y)
    assert render("{{ x }}-{{ y }}", names) == f"{x}-{y}"


# -- the budget: what building and reading cost (expression_budget.py, docs/decisions.md) ----------------------------


def _spent(source: str, names: dict[str, Any]) -> tuple[int, Any]:
    budget = Budget()
    value = evaluate(source, names, budget)
    return EXPRESSION_BUDGET - budget.left, value


def _shared(levels: int, leaf: Any = "x", copies: int = 10) -> Any:
    """A list of `copies` references to a list of `copies` references ... to `leaf`: tiny in memory, but
    `copies ** levels` leaves to anything that writes it out or compares it."""
    value = leaf
    for _ in range(levels):
        value = [value] * copies
    return value


@pytest.mark.parametrize(
    ("value", "units"),
    [
        (None, 1),
        (True, 1),
        (7, 1),
        (2.5, 1),
        (MAX_INT, 1),
        (10**40, 41),  # beyond 10^18, one unit per character
        (-(10**40), 42),
        ("", 1),
        ("abcd", 5),
        ([], 1),
        ([1, "ab"], 1 + 1 + 3),
        ({"k": [1, 2]}, 1 + 2 + 3),
        ([["ab"]] * 3, 1 + 3 * (1 + 3)),  # a shared value counts every time it appears
        (_shared(8), sum(10**i for i in range(8)) + 2 * 10**8),
    ],
)
def test_size_of_a_value(value: Any, units: int) -> None:
    assert Budget(10**10).size(value) == units


def test_reading_a_name_or_a_literal_costs_nothing() -> None:
    assert _spent("s", {"s": "x" * 50_000}) == (0, "x" * 50_000)
    assert _spent("'text'", {})[0] == 0


@pytest.mark.parametrize(
    ("source", "units"),
    [
        ("[s, s]", 1 + 5 + 5),  # the list built: its size
        ("{'k': s}", 1 + 2 + 5),  # a mapping: its keys too
        ("s + s", 9),  # a text built: 1 + its length
        ("n + 1", 1),  # a number built: 1
        ("s == t", 5 + 5),  # a comparison: both sides
        ("s in l", 5 + (1 + 5 + 2)),
        ("l[0:1]", 1 + 5),  # a slice is a new list
        ("str(l)", 1 + 1 + len('["abcd", "x"]')),  # the call, then the text made
        ("sorted(['b', 'a'])", (1 + 2 + 2) + 1 + 2 * 2 * 2 + (1 + 2 + 2)),  # list, call, keys x levels, result
        ("'%05.1f' % n", len("003.0") + 1),  # the text made (refused before when the most it could make is too much)
    ],
)
def test_what_building_and_reading_cost(source: str, units: int) -> None:
    assert _spent(source, {"s": "abcd", "t": "abcd", "n": 3, "l": ["abcd", "x"]})[0] == units


# every operator and function that builds or walks, on a value of 10^8 shared leaves given by name
HUGE_READS = [
    "a == b", "a != b", "a < b", "'x' in a", "a in [b]", "a + b", "a[1:]", "[a]", "{'k': a}", "str(a)",
    "upper(a)", "lower(a)", "strip(a)", "join(',', a)", "join(',', [a])", "sorted(a)", "sort_by(a, 0)",
    "min_by(a, 0)", "max_by(a, 0)", "min(a)", "max(a)", "min(a, b)", "pluck(a, 0)", "where(a, 0, 'x')",
    "scramble(a)", "'k=' + str(a)", "{a: 1}", "a[0] == b[0]", "'%s' % [a]",
]  # fmt: skip


@pytest.mark.parametrize("source", HUGE_READS)
def test_a_shared_value_of_ten_to_the_eight_is_refused_not_walked(source: str) -> None:
    """Without the budget each of these walks 10^8 leaves (minutes, gigabytes); with it, each stops at once."""
    names = {"a": _shared(8), "b": _shared(8)}
    began = time.process_time()
    with pytest.raises(ExpressionError) as caught:
        evaluate(source, names)
    assert time.process_time() - began < 10  # a guard: the refusal takes milliseconds
    assert len(str(caught.value)) <= 300 and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "template",
    ["{{ a }} and more", {"k": "{{ a }}"}, ["{{ a }}", "{{ a }}"], {"k": ["x {{ a[0] }}"]}],
    ids=["interpolated", "in-a-mapping", "in-a-list", "nested"],
)
def test_a_template_is_charged_for_what_it_places(template: Any) -> None:
    with pytest.raises(BudgetExceeded):
        render(template, {"a": _shared(8)})
    assert render("{{ a }}", {"a": _shared(8)}) is not None  # handing a value on as it is builds nothing


def test_lets_share_one_budget_per_call() -> None:
    """Three `let`s of 105,556 units each fit the per-value limit, not the call's budget together."""
    from mcp_hazard.scenario.behaviours import BehaviourFault, run_behaviour
    from mcp_hazard.scenario.models import ToolSpec

    lets = {"a1": "[w, w, w, w, w, w, w, w, w, w]"}
    lets |= {f"a{i}": ", ".join([f"a{i - 1}"] * 10).join("[]") for i in (2, 3, 4)}
    lets |= {f"c{i}": ", ".join(["a4"] * 5).join("[]") for i in range(3)}
    tool = ToolSpec.model_validate(
        {
            "name": "t",
            "description": "d",
            "input_schema": {"type": "object", "properties": {"w": {"type": "string"}}},
            "behaviour": {"kind": "compute", "let": lets, "result": "{{ len(c4) }}"},
        }
    )
    with pytest.raises(BehaviourFault, match=r"let c2: expression budget exceeded: a list would take the call past"):
        run_behaviour(tool, {"w": "x"})
    lets.pop("c2")
    small = tool.model_copy(update={"behaviour": tool.behaviour.model_copy(update={"let": lets, "result": "ok"})})
    assert run_behaviour(small, {"w": "x"}).result == "ok"


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("[[[[[[[[[[x]]]]]]]]]]", "nest deeper than 64"),
        ("[[[[[[[[[[deep]]]]]]]]]]", "nested deeper than 64"),
    ],
)
def test_values_cannot_nest_deeper_than_the_limit(source: str, words: str) -> None:
    deep: Any = "x"
    for _ in range(MAX_VALUE_DEPTH):
        deep = [deep]
    names = {"x": deep, "deep": [[deep]] if "deep" in source else deep}
    with pytest.raises(BudgetExceeded, match=words):
        evaluate(source, names)
    assert evaluate("[x]", {"x": deep[0]}) is not None  # exactly the limit is fine


def test_a_chain_of_lets_is_refused_at_its_first_link_over_the_limit() -> None:
    chain = {"a0": "[w]", **{f"a{i}": f"[a{i - 1}]" for i in range(1, 3000)}}
    assert deepest_let(chain) == f"a{MAX_LET_DEPTH}"
    assert deepest_let({f"a{i}": "w + 1" for i in range(3000)}) is None  # many lets, none built on another
    assert deepest_let({"w": "w + 1", "v": "w"}) is None


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("'%0999999999d' % 1", f"over the limit of {MAX_FORMAT_WIDTH}"),
        ("'%.999999999f' % 1", f"over the limit of {MAX_FORMAT_WIDTH}"),
        ("'%(a)0999999999s' % {'a': 'x'}", f"over the limit of {MAX_FORMAT_WIDTH}"),
        ("'%*d' % [5, 1]", "'*'"),
        ("'%.*f' % [5, 1.5]", "'*'"),
        ("'%s' % [1, 2]", "not [1, 2]"),
        ("'%(a)s' % {'a': [1]}", "not [1]"),
        ("'%(a)s' % 1", "needs a mapping"),
        ("'%(b)s' % {'a': 1}", "no field 'b'"),
        ("'%y' % 1", "unsupported format"),
        ("f % {'a': 1}", f"over the limit of {MAX_VALUE_UNITS:,}"),  # 400 conversions of 999 characters
    ],
)
def test_formats_are_bounded_before_python_formats_them(source: str, words: str) -> None:
    names = {"f": "%(a)0999d" * 400}
    began = time.process_time()
    with pytest.raises(ExpressionError) as caught:
        evaluate(source, names)
    assert words in str(caught.value)
    assert time.process_time() - began < 10  # a guard: without the caps the first one makes a gigabyte


@settings(max_examples=300, deadline=None, database=None)
@given(
    flags=st.sampled_from(["", "-", "+", " ", "#", "0", "-0", "+#"]),
    width=st.one_of(st.just(""), st.integers(0, MAX_FORMAT_WIDTH).map(str)),
    precision=st.one_of(st.just(""), st.integers(0, MAX_FORMAT_WIDTH).map(lambda p: f".{p}")),
    kind=st.sampled_from(list("diouxXeEfFgGcrsa%")),
    value=st.one_of(
        st.integers(-(10**30), 10**30), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30),
        st.booleans(), st.none(),
    ),
)  # fmt: skip
def test_a_bounded_format_is_pythons_format_within_its_charge(
    flags: str, width: str, precision: str, kind: str, value: Any
) -> None:
    template = f"<%{flags}{width}{precision}{kind}>"
    try:
        expected: Any = template % value
    except (TypeError, ValueError, OverflowError) as exc:
        expected = type(exc)
    budget = Budget()
    try:
        got: Any = evaluate("t % v", {"t": template, "v": value}, budget)
    except ExpressionError as exc:
        assert isinstance(expected, type), (template, value, exc)
        return
    assert got == expected
    assert EXPRESSION_BUDGET - budget.left >= len(got) + 1


@settings(max_examples=300, deadline=None, database=None)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6),
        max_leaves=40,
    ),
    sort_keys=st.booleans(),
    ascii_only=st.booleans(),
)
def test_json_text_is_json_dumps_on_either_path(value: Any, sort_keys: bool, ascii_only: bool) -> None:
    """Piece by piece (a budget too small for the one-call path) or in one call, the text is json.dumps's."""
    expected = json.dumps(value, sort_keys=sort_keys, ensure_ascii=ascii_only, separators=(", ", ": "))
    for units in (len(expected) + 1, 10**7):
        assert json_text(value, Budget(units), sort_keys=sort_keys, ascii_only=ascii_only) == expected
    with pytest.raises(BudgetExceeded):
        json_text(value, Budget(len(expected)), sort_keys=sort_keys, ascii_only=ascii_only)


def test_scramble_draws_the_same_numbers_as_before() -> None:
    """Generated scenarios draw their wrong values with scramble: its text must stay json.dumps's, sorted, ASCII."""
    for values in [(7, 512), ("é", {"b": 1, "a": [2.5, None]}), (10**30, True)]:
        text = json.dumps(list(values), sort_keys=True, default=str)
        expected = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "big")
        assert evaluate("scramble(*v)".replace("*v", "v0, v1"), {"v0": values[0], "v1": values[1]}) == expected


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("x.missing", {"x": {f"field{i}": i for i in range(5000)}}),
        ("float(s)", {"s": "x" * 90_000}),
        ("l[s]", {"l": [1], "s": "k" * 90_000}),
        ("add_days(l, 1)", {"l": _shared(8)}),
        ("round(l)", {"l": _shared(8)}),
    ],
)
def test_error_messages_are_one_short_line(source: str, names: dict[str, Any]) -> None:
    with pytest.raises(ExpressionError) as caught:
        evaluate(source, names)
    assert len(str(caught.value)) <= 300 and "\n" not in str(caught.value)


def test_a_template_part_without_expressions_is_a_literal_and_costs_nothing() -> None:
    """A table row's literal result is a copy of the file, bounded by the loader's limits: it costs nothing. A mapping
    that also holds an expression's value is a value built, its literal parts included."""
    literal = {"rows": ["x" * 1000] * 200}  # over 200,000 units, all written in the file
    budget = Budget()
    assert render(literal, {}, budget) == literal
    assert budget.left == EXPRESSION_BUDGET
    with pytest.raises(BudgetExceeded, match="a template's mapping would be"):
        render({**literal, "n": "{{ 1 }}"}, {})

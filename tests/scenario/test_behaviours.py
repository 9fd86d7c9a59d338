"""Tool behaviours: table, constant, compute and python, run directly on validated ToolSpecs."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_hazard.errors import UserError
from mcp_hazard.scenario.behaviours import (
    BehaviourFault,
    PythonNotAllowed,
    ToolOutcome,
    argument_names,
    run_behaviour,
)
from mcp_hazard.scenario.models import ToolSpec

_module_numbers = itertools.count()


def make_tool(behaviour: dict[str, Any], properties: dict[str, Any] | None = None, **extra: Any) -> ToolSpec:
    properties = properties if properties is not None else {"city": {"type": "string"}, "n": {"type": "number"}}
    return ToolSpec.model_validate(
        {
            "name": "probe",
            "description": "A tool under test.",
            "input_schema": {"type": "object", "properties": properties},
            "behaviour": behaviour,
            **extra,
        }
    )


CITY_TABLE = {
    "kind": "table",
    "rows": [
        {"when": {"city": "Velmora"}, "result": {"code": "VLM"}},
        {"when": {"city": "Velmora", "n": 2}, "result": {"code": "never reached: the first row matches first"}},
        {"when": {"city": "Castrane", "n": 2}, "result": {"code": "CST-2", "n": "{{ n }}"}},
        {"when": {"city": "Castrane"}, "result": {"code": "CST"}},
        {"when": {"city": "Pressa"}, "error": "Pressa is closed on {{ args.day }}"},
    ],
    "default": {"error": "Unknown city '{{ city }}'"},
}


# -- table ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"city": "Velmora"}, ToolOutcome(result={"code": "VLM"})),
        ({"city": "Velmora", "n": 2}, ToolOutcome(result={"code": "VLM"})),
        ({"city": "Castrane", "n": 2}, ToolOutcome(result={"code": "CST-2", "n": 2})),
        ({"city": "Castrane", "n": 2.0}, ToolOutcome(result={"code": "CST-2", "n": 2.0})),
        ({"city": "Castrane", "n": 3}, ToolOutcome(result={"code": "CST"})),
        ({"city": "Castrane"}, ToolOutcome(result={"code": "CST"})),
        ({"city": "Pressa", "day": "Sunday"}, ToolOutcome(error="Pressa is closed on Sunday")),
        ({"city": "Olyndra"}, ToolOutcome(error="Unknown city 'Olyndra'")),
        ({"city": "velmora"}, ToolOutcome(error="Unknown city 'velmora'")),
        ({}, ToolOutcome(error="Unknown city ''")),
    ],
)
def test_table_first_matching_row_wins_else_default(arguments: dict[str, Any], expected: ToolOutcome) -> None:
    outcome = run_behaviour(make_tool(CITY_TABLE), arguments)
    assert outcome == expected
    assert outcome.ok is (expected.error is None)


def test_table_row_requires_every_named_argument_to_be_present() -> None:
    tool = make_tool(
        {"kind": "table", "rows": [{"when": {"n": None}, "result": "n was null"}], "default": {"result": "other"}}
    )
    assert run_behaviour(tool, {"n": None}).result == "n was null"
    assert run_behaviour(tool, {}).result == "other"  # absent is not the same as null


def test_table_row_with_empty_when_matches_everything() -> None:
    tool = make_tool({"kind": "table", "rows": [{"result": "always"}], "default": {"result": "never"}})
    assert run_behaviour(tool, {"city": "anything"}).result == "always"


def test_table_does_not_confuse_booleans_with_numbers() -> None:
    tool = make_tool(
        {
            "kind": "table",
            "rows": [{"when": {"flag": True}, "result": "bool"}, {"when": {"flag": 1}, "result": "one"}],
            "default": {"result": "none"},
        },
        properties={"flag": {}},
    )
    assert run_behaviour(tool, {"flag": True}).result == "bool"
    assert run_behaviour(tool, {"flag": 1}).result == "one"
    assert run_behaviour(tool, {"flag": 1.0}).result == "one"
    assert run_behaviour(tool, {"flag": False}).result == "none"
    assert run_behaviour(tool, {"flag": 0}).result == "none"


def test_table_casefold_ignores_case_and_outer_spaces_for_text_only() -> None:
    behaviour = {**CITY_TABLE, "casefold": True}
    tool = make_tool(behaviour)
    assert run_behaviour(tool, {"city": "  VELMORA "}).result == {"code": "VLM"}
    assert run_behaviour(tool, {"city": "castrane", "n": 2}).result == {"code": "CST-2", "n": 2}
    assert run_behaviour(tool, {"city": "Vel mora"}).error == "Unknown city 'Vel mora'"
    strict = make_tool(CITY_TABLE)
    assert run_behaviour(strict, {"city": "  VELMORA "}).error == "Unknown city '  VELMORA '"


def test_table_results_are_templates_that_keep_types() -> None:
    tool = make_tool(
        {
            "kind": "table",
            "rows": [
                {
                    "when": {"city": "Velmora"},
                    "result": {
                        "echo": "{{ city }}",
                        "double": "{{ n * 2 }}",
                        "label": "{{ upper(city) }}-{{ n }}",
                        "list": ["{{ n }}", "{{ n > 1 }}", 3],
                        "all": "{{ args }}",
                    },
                }
            ],
            "default": {"result": None},
        }
    )
    outcome = run_behaviour(tool, {"city": "Velmora", "n": 1.5})
    assert outcome.result == {
        "echo": "Velmora",
        "double": 3.0,
        "label": "VELMORA-1.5",
        "list": [1.5, True, 3],
        "all": {"city": "Velmora", "n": 1.5},
    }


def test_declared_but_absent_arguments_are_null_in_templates() -> None:
    tool = make_tool({"kind": "constant", "result": {"n": "{{ n }}", "has_n": "{{ n != null }}"}})
    assert run_behaviour(tool, {"city": "x"}).result == {"n": None, "has_n": False}
    names = argument_names(tool, {"city": "x", "undeclared": 1})
    assert names == {"city": "x", "n": None, "undeclared": 1, "args": {"city": "x", "undeclared": 1}, "writes": []}


def test_an_argument_named_args_is_not_shadowed() -> None:
    tool = make_tool({"kind": "constant", "result": "{{ args }}"}, properties={"args": {"type": "string"}})
    assert run_behaviour(tool, {"args": "mine"}).result == "mine"


# -- constant ------------------------------------------------------------------------------------------------------


def test_constant_result_is_the_same_for_any_arguments() -> None:
    tool = make_tool({"kind": "constant", "result": {"visa_required": False, "note": "none"}})
    for arguments in ({}, {"city": "a"}, {"city": "b", "n": 3}):
        assert run_behaviour(tool, arguments) == ToolOutcome(result={"visa_required": False, "note": "none"})


def test_constant_error_is_returned_as_a_declared_error() -> None:
    tool = make_tool({"kind": "constant", "error": "service retired; use {{ 'new_' + 'tool' }} for {{ city }}"})
    outcome = run_behaviour(tool, {"city": "Velmora"})
    assert outcome == ToolOutcome(error="service retired; use new_tool for Velmora")
    assert not outcome.ok


def test_constant_null_result_is_ok() -> None:
    outcome = run_behaviour(make_tool({"kind": "constant", "result": None}), {})
    assert outcome.ok and outcome.result is None


@pytest.mark.parametrize(
    "behaviour",
    [
        {"kind": "constant"},
        {"kind": "constant", "result": 1, "error": "both"},
        {"kind": "constant", "error": 5},
        {"kind": "table", "rows": [], "default": {"result": 1}},
        {"kind": "table", "rows": [{"when": {}, "result": 1, "error": "x"}], "default": {"result": 1}},
        {"kind": "table", "rows": [{"result": 1}]},
        {"kind": "compute"},
        {"kind": "compute", "result": 1, "errors": [{"when": "x", "error": "y"}]},
        {"kind": "python", "function": "no_colon"},
        {"kind": "python", "function": "mod:func:extra"},
        {"kind": "magic", "result": 1},
    ],
)
def test_malformed_behaviours_are_rejected_by_the_model(behaviour: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        make_tool(behaviour)


# -- compute -------------------------------------------------------------------------------------------------------

CONVERT = {
    "kind": "compute",
    "let": {
        "per_eur": "{'EUR': 1.0, 'USD': 1.0825, 'GBP': 0.8412}",
        "eur": "amount / per_eur[from_currency]",
        "converted": "round(eur * per_eur[to_currency], 2)",
    },
    "errors": [
        {"if": "amount < 0", "error": "amount must not be negative, got {{ amount }}"},
        {"if": "from_currency not in per_eur", "error": "unknown currency {{ from_currency }}"},
        {"if": "to_currency not in per_eur", "error": "unknown currency {{ to_currency }}"},
    ],
    "result": {"amount": "{{ converted }}", "currency": "{{ to_currency }}", "text": "{{ fixed(converted) }}"},
}
CONVERT_PROPERTIES = {
    "amount": {"type": "number"},
    "from_currency": {"type": "string"},
    "to_currency": {"type": "string"},
}


def test_compute_uses_let_in_order() -> None:
    tool = make_tool(CONVERT, CONVERT_PROPERTIES)
    outcome = run_behaviour(tool, {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"})
    assert outcome == ToolOutcome(result={"amount": 204.59, "currency": "USD", "text": "204.59"})


def test_compute_guards_are_checked_in_order_before_the_result() -> None:
    tool = make_tool(CONVERT, CONVERT_PROPERTIES)
    # the first guard fires, so the result (which would be computable) is not returned
    outcome = run_behaviour(tool, {"amount": -1, "from_currency": "EUR", "to_currency": "EUR"})
    assert outcome == ToolOutcome(error="amount must not be negative, got -1")
    guarded = make_tool(
        {
            "kind": "compute",
            "errors": [{"if": "n > 1", "error": "first"}, {"if": "n > 0", "error": "second"}],
            "result": "{{ 1 / (n - n) }}",  # would fail if it were evaluated
        }
    )
    assert run_behaviour(guarded, {"n": 2}).error == "first"
    assert run_behaviour(guarded, {"n": 1}).error == "second"


def test_compute_guard_errors_are_templates() -> None:
    tool = make_tool(
        {
            "kind": "compute",
            "errors": [{"if": "n > 10", "error": "n is {{ n }}, the most is 10"}],
            "result": "{{ n * 10 }}",
        }
    )
    assert run_behaviour(tool, {"n": 11}) == ToolOutcome(error="n is 11, the most is 10")
    assert run_behaviour(tool, {"n": 3}) == ToolOutcome(result=30)


def test_compute_guard_sees_let_names() -> None:
    tool = make_tool(
        {
            "kind": "compute",
            "let": {"nights": "days_between(start, end)"},
            "errors": [{"if": "nights < 1", "error": "stay at least one night (got {{ nights }})"}],
            "result": {"nights": "{{ nights }}"},
        },
        properties={"start": {"type": "string"}, "end": {"type": "string"}},
    )
    assert run_behaviour(tool, {"start": "2026-03-14", "end": "2026-03-16"}).result == {"nights": 2}
    assert run_behaviour(tool, {"start": "2026-03-14", "end": "2026-03-14"}).error == (
        "stay at least one night (got 0)"
    )


def test_compute_let_may_shadow_an_argument() -> None:
    tool = make_tool({"kind": "compute", "let": {"n": "n + 1"}, "result": "{{ n }}"})
    assert run_behaviour(tool, {"n": 1}).result == 2


@pytest.mark.parametrize(
    ("behaviour", "arguments", "words"),
    [
        ({"kind": "compute", "result": "{{ 1 / n }}"}, {"n": 0}, "ZeroDivisionError"),
        ({"kind": "compute", "let": {"a": "city.code"}, "result": 1}, {"city": "Velmora"}, ""),
        ({"kind": "compute", "result": "{{ ghost }}"}, {}, "unknown name 'ghost'"),
        ({"kind": "compute", "errors": [{"if": "n > 'x'", "error": "e"}], "result": 1}, {"n": 1}, "TypeError"),
        ({"kind": "compute", "result": "{{ 2 ** n }}"}, {"n": 100}, "exponent"),
        ({"kind": "table", "rows": [{"result": "{{ args.missing }}"}], "default": {"result": 1}}, {}, "missing"),
        ({"kind": "table", "rows": [{"when": {"n": 1}, "result": 1}], "default": {"error": "{{ 1/0 }}"}}, {}, ""),
        ({"kind": "constant", "result": {"deep": ["{{ n.x }}"]}}, {"n": 5}, "cannot look up"),
    ],
)
def test_broken_expression_at_run_time_is_a_behaviour_fault(
    behaviour: dict[str, Any], arguments: dict[str, Any], words: str
) -> None:
    tool = make_tool(behaviour)
    with pytest.raises(BehaviourFault) as caught:
        run_behaviour(tool, arguments)
    assert words in str(caught.value)


def test_behaviours_are_deterministic() -> None:
    tool = make_tool(CONVERT, CONVERT_PROPERTIES)
    arguments = {"amount": 12.34, "from_currency": "GBP", "to_currency": "USD"}
    first = run_behaviour(tool, arguments)
    assert all(run_behaviour(tool, dict(arguments)) == first for _ in range(20))


def test_run_behaviour_does_not_mutate_arguments() -> None:
    arguments = {"city": "Castrane", "n": 2}
    run_behaviour(make_tool(CITY_TABLE), arguments)
    assert arguments == {"city": "Castrane", "n": 2}


# -- python --------------------------------------------------------------------------------------------------------


@pytest.fixture
def python_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module written to tmp_path and importable (sys.path entry and import removed after the test)."""
    name = f"hazard_test_behaviour_{next(_module_numbers)}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            CALLS = []

            def describe(args):
                CALLS.append(dict(args))
                if args.get("city") == "Nowhere":
                    raise ValueError("no such city: Nowhere")
                return {"city": args["city"], "length": len(args["city"])}

            def not_json(args):
                return {"set": {1, 2}}

            def crash(args):
                raise RuntimeError("the author's bug")

            NOT_CALLABLE = 5
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    return name


def test_python_behaviour_is_refused_without_allow_python(python_module: str) -> None:
    tool = make_tool({"kind": "python", "function": f"{python_module}:describe"})
    with pytest.raises(PythonNotAllowed) as caught:
        run_behaviour(tool, {"city": "Velmora"})
    assert "--allow-python" in str(caught.value)
    assert isinstance(caught.value, UserError)
    assert python_module not in __import__("sys").modules, "the module must not even be imported"


def test_python_behaviour_runs_with_allow_python(python_module: str) -> None:
    tool = make_tool({"kind": "python", "function": f"{python_module}:describe"})
    arguments = {"city": "Velmora"}
    outcome = run_behaviour(tool, arguments, allow_python=True)
    assert outcome == ToolOutcome(result={"city": "Velmora", "length": 7})
    module = __import__(python_module)
    assert module.CALLS == [{"city": "Velmora"}]


def test_python_value_error_becomes_a_declared_error(python_module: str) -> None:
    tool = make_tool({"kind": "python", "function": f"{python_module}:describe"})
    assert run_behaviour(tool, {"city": "Nowhere"}, allow_python=True) == ToolOutcome(error="no such city: Nowhere")


def test_python_non_json_result_is_a_behaviour_fault(python_module: str) -> None:
    tool = make_tool({"kind": "python", "function": f"{python_module}:not_json"})
    with pytest.raises(BehaviourFault, match="not JSON"):
        run_behaviour(tool, {}, allow_python=True)


@pytest.mark.parametrize(
    ("function", "words"),
    [
        ("{module}:missing", "no function 'missing'"),
        ("{module}:NOT_CALLABLE", "no function"),
        ("nope_zz_mod:f", "cannot import"),
    ],
)
def test_python_missing_module_or_function_is_a_user_error(python_module: str, function: str, words: str) -> None:
    tool = make_tool({"kind": "python", "function": function.format(module=python_module)})
    with pytest.raises(UserError) as caught:
        run_behaviour(tool, {}, allow_python=True)
    assert words in str(caught.value)

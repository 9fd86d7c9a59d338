"""A second source stands in for a step only when it has what the task reads there, a yes/no included: a ledger of
numbers cannot be the fallback or the cross-check of a step read only for `headliner: true`."""

from __future__ import annotations

from pathlib import Path

from mcp_hazard.hazards.instances import all_hazards
from mcp_hazard.hazards.needed_values import supplies, supplying_siblings
from mcp_hazard.load import load_scenario

FESTIVAL = Path(__file__).resolve().parents[2] / "scenarios" / "suite" / "suite-festival.yaml"


def test_a_yes_no_is_supplied_only_by_the_same_yes_no() -> None:
    assert supplies([True], {"headliner": True})
    assert not supplies([True], {"price_cents": 100, "units": 1})
    assert not supplies([False], {"count": 0})
    assert supplies([2.5], {"flag": True, "amount_cents": 250})


def test_a_step_read_for_a_yes_no_has_no_numeric_stand_in() -> None:
    scenario = load_scenario(FESTIVAL).model
    flag, price = scenario.task("flag"), scenario.task("measure-difference")
    assert flag is not None and price is not None
    assert supplying_siblings(scenario, flag, "get_act") == []
    assert {spec.kind for spec in all_hazards(scenario, flag)}.isdisjoint({"permanent_error", "conflict"})
    assert supplying_siblings(scenario, price, "get_act") == ["act_ledger"]  # the set length it does have

"""The condition label (canonical, parameter-aware), pairing of repeated trials in robustness and hint gain, and the
caches the scorer relies on (docs/scoring.md, "Many episodes"; docs/performance.md, "Scoring throughput")."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.hazards.base import siblings
from mcp_hazard.hazards.instances import parse_hazard_option
from mcp_hazard.load import load_scenario
from mcp_hazard.scoring.aggregate import aggregate
from mcp_hazard.scoring.collect import score_traces
from mcp_hazard.scoring.episode_score import EpisodeScore
from mcp_hazard.scoring.labels import hazard_label
from mcp_hazard.scoring.trace_index import call_key, redundant_calls

from .test_episode_rules import TRAVEL, Builder

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _specs(*options: str) -> list[dict[str, Any]]:
    """Hazard options as the trace records them in `episode_started.condition.hazards`."""
    specs: list[dict[str, Any]] = []
    for option in options:
        parsed = parse_hazard_option(option)
        assert isinstance(parsed, list)
        specs.extend(spec.model_dump(mode="json") for spec in parsed)
    return specs


def _score(*options: str, correct: bool = True, seed: int = 0, profile: str = "strict",
           interventions: tuple[str, ...] = (), agent: str = "a") -> EpisodeScore:  # fmt: skip
    kinds = [option.partition(":")[0] for option in options]
    builder = Builder("fare-class", hazards=kinds, seed=seed, profile=profile, agent=agent)
    builder.events[0]["condition"]["hazards"] = _specs(*options)
    if interventions:
        builder.events[0]["condition"]["interventions"] = list(interventions)
    return builder.answer("Standard" if correct else "nope").score()


@pytest.mark.parametrize(
    ("options", "label"),
    [
        ((), "clean"),
        (("transient_error",), "transient_error"),
        (("spec_drift:mode=rename_tool",), "spec_drift:mode=rename_tool"),
        (("transient_error:times=2,error=rate_limited",), "transient_error:error=rate_limited,times=2"),
        (("transient_error:slots=1+3,probability=0.5,tools=get_fare",), "transient_error:probability=0.5,slots=1+3"),
        (("transient_error:retry_after_s=0",), "transient_error:retry_after_s=0"),
        (("spec_drift:mode=rename_tool", "conflict"), "conflict+spec_drift:mode=rename_tool"),
        (("conflict", "conflict"), "conflict"),
    ],
)
def test_condition_label_is_canonical_and_keeps_parameters(options: tuple[str, ...], label: str) -> None:
    score = _score(*options)
    assert score.condition == label
    assert score.hazard_kinds == [option.partition(":")[0] for option in options]  # unchanged: by-kind grouping
    assert _score(*reversed(options)).condition == label  # the order of the hazards does not matter


def test_hazard_label_reads_back_as_the_same_spec() -> None:
    """A label of one hazard is a valid `--hazard` option giving the same kind, parameters and schedule."""
    for option in ("transient_error:error=rate_limited,times=2", "spec_drift:mode=rename_tool,slots=2+4",
                   "transient_error:retry_after_s=0.5", "invocation_error"):  # fmt: skip
        (spec,) = _specs(option)
        (again,) = _specs(hazard_label(spec))
        assert again == spec
    quoted = {"kind": "k", "params": {"a": "1", "b": "true", "c": "text"}, "schedule": None}
    assert hazard_label(quoted) == 'k:a="1",b="true",c=text'  # strings stay strings when read back


def test_condition_without_a_hazards_list_falls_back_to_the_kinds() -> None:
    builder = Builder("fare-class", hazards=["spec_drift"])
    del builder.events[0]["condition"]["hazards"]
    assert builder.answer("Standard").score().condition == "spec_drift"


def test_conditions_differing_only_in_parameters_stay_apart() -> None:
    scores = []
    for seed in range(4):
        scores.append(_score(seed=seed))
        scores.append(_score("spec_drift", seed=seed))
        scores.append(_score("spec_drift:mode=rename_tool", correct=False, seed=seed))
        scores.append(_score("spec_drift", seed=seed, profile="guided"))
        scores.append(_score("spec_drift:mode=rename_tool", correct=seed < 2, seed=seed, profile="guided"))
    report = aggregate(scores)
    rows = {(r["condition"], r["profile"]): (r["pairs"], r["accuracy_condition"]) for r in report["robustness"]}
    assert rows == {("spec_drift", "strict"): (4, 1.0), ("spec_drift:mode=rename_tool", "strict"): (4, 0.0)}
    gains = {r["condition"]: (r["pairs"], r["gain"]) for r in report["hint_gain"]}
    assert gains == {"spec_drift": (4, 0.0), "spec_drift:mode=rename_tool": (4, 0.5)}
    assert report["groups"]["condition"]["spec_drift"]["n"] == 8
    assert report["groups"]["condition"]["spec_drift:mode=rename_tool"]["n"] == 8
    assert report["groups"]["hazard_kind"]["spec_drift"]["n"] == 16  # by kind, the two still count together
    stressors = {r["stressor"] for r in report["compounding"] if r["kind"] == "hazard"}
    assert {"spec_drift", "spec_drift:mode=rename_tool", "pooled"} <= stressors


def test_repeated_trials_with_one_seed_all_count_and_pair_in_order() -> None:
    scores = [
        _score(correct=True),
        _score("transient_error", correct=False),
        _score(correct=False),
        _score("transient_error", correct=True),
        _score(correct=True),  # a third clean trial has no partner: left out
    ]
    (row,) = aggregate(scores)["robustness"]
    assert row["pairs"] == 2
    assert (row["accuracy_clean"], row["accuracy_condition"]) == (0.5, 0.5)
    assert row["paired_accuracy"] == 0.0  # pairs (clean, hazard) in order: (True, False), (False, True)

    strict_guided = [
        _score("transient_error", correct=False),
        _score("transient_error", correct=True, profile="guided"),
        _score("transient_error", correct=True),
        _score("transient_error", correct=True, profile="guided"),
    ]
    (gain,) = aggregate(strict_guided)["hint_gain"]
    assert gain["pairs"] == 2
    assert (gain["accuracy_strict"], gain["accuracy_guided"]) == (0.5, 1.0)
    assert (gain["newly_solved"], gain["regressions"]) == (1, 0)


def test_intervention_robustness_pairs_each_item_with_its_original_interface() -> None:
    """Acc(intervened)/Acc(original) per agent, profile and intervention: a trial pairs only with the trial of the
    same seed, profile and hazard condition that had no intervention; composed interventions are their own group."""
    scores = []
    for seed in range(10):
        scores.append(_score(seed=seed, correct=seed != 9))  # 9 of 10 solved with the original interface
        scores.append(_score(seed=seed, correct=seed < 6, interventions=("rename",)))  # 6 of 10, all solved before
        scores.append(_score(seed=seed, correct=seed >= 8, interventions=("reorder",)))  # seed 9 solved only here
        scores.append(_score(seed=seed, correct=False, interventions=("replace", "reorder")))
    scores.append(_score("transient_error", seed=0, correct=False))
    scores.append(_score("transient_error", seed=0, correct=True, interventions=("rename",)))
    scores.append(_score(seed=11, correct=True, interventions=("augment",)))  # no original partner: left out
    scores.append(_score(seed=11, correct=True, interventions=("augment",), profile="guided"))
    rows = {r["intervention"]: r for r in aggregate(scores)["intervention_robustness"]}
    assert set(rows) == {"rename", "reorder", "replace+reorder"}  # the hazard pair and the clean ones pool
    rename, reorder, both = rows["rename"], rows["reorder"], rows["replace+reorder"]
    assert (rename["pairs"], rename["accuracy_original"]) == (11, 9 / 11)
    assert rename["accuracy_intervened"] == pytest.approx(7 / 11)
    assert rename["robustness_ratio"] == pytest.approx(7 / 9)
    assert rename["paired_accuracy"] == pytest.approx(6 / 11)  # the hazard pair (False, True) is not credited
    assert (reorder["pairs"], reorder["accuracy_intervened"], reorder["paired_accuracy"]) == (10, 0.2, 0.1)
    assert reorder["robustness_ratio"] == pytest.approx(0.2 / 0.9)
    assert (both["robustness_ratio"], both["paired_accuracy"]) == (0.0, 0.0)
    solo = aggregate([_score(seed=0, correct=False), _score(seed=0, interventions=("rename",))])
    (row,) = solo["intervention_robustness"]
    assert row["robustness_ratio"] is None  # nothing solved with the original interface: no ratio
    assert aggregate([_score(seed=s) for s in range(3)])["intervention_robustness"] == []


def test_siblings_cache_gives_the_uncached_answer_and_a_fresh_list() -> None:
    for path in sorted(SCENARIOS.glob("*.yaml")):
        scenario = load_scenario(path).model
        for tool in [t.name for t in scenario.tools] + ["no_such_tool"]:
            spec = scenario.tool(tool)
            expected = (
                [o.name for o in scenario.tools if o.name != tool and set(spec.serves) & set(o.serves)]
                if spec is not None and spec.serves
                else []
            )
            first = siblings(scenario, tool)
            assert first == expected
            first.append("changed by a caller")
            assert siblings(scenario, tool) == expected
    copy = TRAVEL.model.model_copy(update={"tools": TRAVEL.model.tools[:1]})  # another object: its own entry
    assert siblings(copy, "get_fare") == []


def test_score_traces_leaves_the_garbage_collector_as_it_was(tmp_path: Path) -> None:
    trace = Builder("fare-class").call("get_fare", {"flight_id": "AU-426"}, result={"fare_class": "Standard"})
    path = tmp_path / "one.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in trace.answer("Standard").events), encoding="utf-8")
    gc.unfreeze()  # an in-process server earlier in this worker may have frozen its start-up heap (server/heap.py)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert [s.correct for s in score_traces([str(path)]).scores] == [True]
    assert gc.isenabled() and gc.get_freeze_count() == 0  # on again, and nothing left frozen
    gc.disable()
    try:
        score_traces([str(path)])
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def test_known_text_prefixes_and_number_support() -> None:
    """An argument value counts as known only from results before the call; an answer's number anywhere in them."""
    score = (
        Builder("fare-in-dollars")
        .call("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}, "error", error="x")
        .call("get_fare", {"flight_id": "AU-412"}, result={"flight_id": "AU-412", "price_eur": 189.0})
        .call("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}, "error", error="x")
        .answer("EUR 189.00")
    ).score()  # fmt: skip
    assert [f.failure for f in score.failures] == ["unknown_value", "incorrect_known_value"]
    assert score.episode_failure == "wrong_answer"  # 189 appears in a result: supported, so not invented


def _json_redundant(calls: list[dict[str, Any]]) -> int:
    keys = [f"{c.get('tool')}|{json.dumps(c.get('arguments'), sort_keys=True, default=str)}" for c in calls]
    return len(keys) - len(set(keys))


@pytest.mark.parametrize(
    "arguments",
    [
        [{"a": 1}, {"a": 1.0}, {"a": True}, {"a": "1"}, {"a": None}, {"a": 1}],
        [{"a": 0.0}, {"a": -0.0}, {"a": float("nan")}, {"a": float("nan")}, {"a": float("inf")}],
        [{"a": 1, "b": "x"}, {"b": "x", "a": 1}, {"a": 1}, {"a": 1, "b": "x", "c": None}],
        [{"a": [1, 2]}, {"a": [1, 2]}, {"a": {"b": 1}}, {"a": {"b": 1.0}}, {"a": 1}],
        [None, None, {}, {}, [], "x"],
        [{1: "x"}, {"1": "x"}, {"a": 2**70}, {"a": 2**70}],
    ],
)
def test_redundant_calls_match_the_json_comparison(arguments: list[Any]) -> None:
    """The fast comparison of flat arguments counts exactly the repeats that comparing sorted-key JSON counts."""
    mixed = ["t", "u", "t", "v", "t", "w"]  # tools called once among one called again: only the latter compared
    distinct = ["p", "q", "r", "s", "x", "y"]  # no tool called twice: nothing repeats
    damaged = [["l"], "a", ["l"], "a", {"t": 1}, "a"]  # names that are no text (a damaged trace): compared as JSON
    for tools in (["t"] * len(arguments), ["t", "u"] * len(arguments), mixed, distinct, damaged,
                  ["a|b", "a", "a|b", "a", None, "a"]):  # fmt: skip
        calls = [{"tool": tool, "arguments": args} for tool, args in zip(tools, arguments, strict=False)]
        assert redundant_calls(calls, call_key) == _json_redundant(calls), (tools, arguments)

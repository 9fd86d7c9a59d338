"""Every scoring rule against hand-made traces whose verdicts are known (docs/scoring.md states the rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.load import load_scenario
from mcp_hazard.scoring.aggregate import aggregate
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.scoring.stats import pass_at_k, pass_hat_k, wilson
from mcp_hazard.trace.reader import Trace

TRAVEL = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "travel.yaml")


class Builder:
    """Builds a trace event by event, numbering `seq` the way the server does."""

    def __init__(self, task: str, *, hazards: list[str] = (), seed: int = 0, profile: str = "strict",
                 agent: str = "a") -> None:  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self.add(
            "episode_started", schema_version=1, task=task,
            scenario={"id": "travel", "path": TRAVEL.path, "sha256": TRAVEL.sha256},
            condition={"seed": seed, "profile": profile, "hazards": [{"kind": k} for k in hazards]},
            software={}, protocol_version="2025-11-25", hazards=[{"kind": k} for k in hazards],
            run={"episode_id": f"e{seed}", "transport": "memory", "agent": agent},
        )  # fmt: skip

    def add(self, type_: str, **fields: Any) -> Builder:
        self.events.append({"seq": len(self.events), "ts": "t", "type": type_, **fields})
        return self

    def call(self, tool: str, args: dict[str, Any], outcome: str = "ok", result: Any = None, error: str | None = None,
             hazards: list[int] = ()) -> Builder:  # fmt: skip
        slot = 1 + sum(1 for e in self.events if e["type"] == "tool_called" and e["tool"] == tool)
        return self.add("tool_called", tool=tool, slot=slot, arguments=args, outcome=outcome, result=result,
                        text=None, error=error, hazards=list(hazards), duration_ms=0.1)  # fmt: skip

    def fire(self, kind: str, tool: str, failpoint: str = "before", index: int = 0) -> Builder:
        slot = 1 + sum(1 for e in self.events if e["type"] == "tool_called" and e["tool"] == tool)
        return self.add("hazard_fired", hazard=index, kind=kind, family=kind, tool=tool, failpoint=failpoint,
                        slot=slot, change={})  # fmt: skip

    def answer(self, value: str) -> Builder:
        return self.add("answer_submitted", answer=value, slot=1).add("episode_ended", reason="answered")

    def score(self):  # type: ignore[no-untyped-def]
        return score_episode(Trace(path="hand-made.jsonl", events=self.events), TRAVEL.model)


FARE_426 = {"flight_id": "AU-426", "price_eur": 167.0, "fare_class": "Standard"}


def test_worked_example_from_the_docs() -> None:
    trace = (
        Builder("fare-class", hazards=["transient_error"], seed=3)
        .fire("transient_error", "get_fare").call("get_fare", {"flight_id": "AU-426"}, "rejected", error="503")
        .fire("transient_error", "get_fare").call("get_fare", {"flight_id": "AU-426"}, "rejected", error="503")
        .call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
        .answer("standard")
    )  # fmt: skip
    score = trace.score()
    assert score.correct and score.episode_failure is None
    assert [(v.recovered, v.path, v.calls_to_recover) for v in score.verdicts] == [
        (True, "retry", 2),
        (True, "retry", 1),
    ]
    assert not score.premature
    assert [f.failure for f in score.failures] == ["injected", "injected"]
    assert (score.calls, score.redundant_calls, score.condition) == (3, 0, "transient_error")


def test_permanent_failure_recovered_only_by_a_sibling() -> None:
    """fare-in-dollars reads the fare (`price_eur`), which the archive carries in `fare_cents`: it stands in."""
    score = (
        Builder("fare-in-dollars", hazards=["permanent_error"])
        .fire("permanent_error", "get_fare").call("get_fare", {"flight_id": "AU-412"}, "rejected", error="503")
        .call("fare_archive_lookup", {"flight": "AU-412"}, result={"fare_cents": 18900})
        .call("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"},
              result={"amount": 204.59, "currency": "USD"})
        .answer("204.59")
    ).score()  # fmt: skip
    (verdict,) = score.verdicts
    assert (verdict.recovered, verdict.path, verdict.calls_to_recover) == (True, "fallback", 1)
    assert not score.premature  # the sibling serves the golden step's fact


def test_a_sibling_without_the_field_the_task_reads_stands_in_for_nothing() -> None:
    """fare-class reads `fare_class`, which the archive does not return: calling it alone is a premature answer,
    and it recovers no permanent failure of get_fare."""
    score = (
        Builder("fare-class", hazards=["permanent_error"])
        .fire("permanent_error", "get_fare").call("get_fare", {"flight_id": "AU-426"}, "rejected", error="503")
        .call("fare_archive_lookup", {"flight": "AU-426"}, result={"flight": "AU-426", "fare_cents": 16700})
        .answer("Standard")
    ).score()  # fmt: skip
    (verdict,) = score.verdicts
    assert (verdict.recovered, verdict.path) == (False, None)
    assert score.premature_reasons == ["no successful call of get_fare"]


def test_unrecovered_hazard_and_premature_answer() -> None:
    score = (
        Builder("fare-class", hazards=["permanent_error"])
        .fire("permanent_error", "get_fare").call("get_fare", {"flight_id": "AU-426"}, "rejected", error="503")
        .answer("Flex")
    ).score()  # fmt: skip
    (verdict,) = score.verdicts
    assert not verdict.recovered and verdict.path is None and verdict.calls_to_recover is None
    assert score.premature and "get_fare" in score.premature_reasons[0]
    assert not score.correct
    assert score.episode_failure == "invented"  # 'Flex' is in no result the agent saw


def test_spec_drift_path_depends_on_relisting() -> None:
    def run(relist: bool) -> str | None:
        builder = Builder("fare-class", hazards=["spec_drift"])
        builder.fire("spec_drift", "get_fare").call("get_fare", {"flight_id": "AU-426"}, "rejected", error="changed")
        if relist:
            builder.add("tools_listed", tools=["get_fare"])
        builder.call("get_fare", {"flight_identifier": "AU-426"}, result=FARE_426).answer("Standard")
        return builder.score().verdicts[0].path

    assert run(True) == "relist"
    assert run(False) == "corrected_call"


def test_conflict_needs_a_cross_check() -> None:
    base = Builder("fare-class", hazards=["conflict"]).fire("conflict", "get_fare", "after")
    base.call("get_fare", {"flight_id": "AU-426"}, result={**FARE_426, "source": "cache"})
    unchecked = base.answer("Standard").score()
    assert not unchecked.verdicts[0].recovered
    assert unchecked.premature and "conflict" in unchecked.premature_reasons[0]

    checked = (
        Builder("fare-in-dollars", hazards=["conflict"]).fire("conflict", "get_fare", "after")
        .call("get_fare", {"flight_id": "AU-412"}, result={"price_eur": 189.0, "source": "cache"})
        .call("fare_archive_lookup", {"flight": "AU-412"}, result={"fare_cents": 18900, "source": "primary"})
        .call("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"},
              result={"amount": 204.59, "currency": "USD"})
        .answer("204.59")
    ).score()  # fmt: skip
    assert (checked.verdicts[0].recovered, checked.verdicts[0].path) == (True, "cross_check")
    assert not checked.premature

    archive_only = (
        Builder("fare-class", hazards=["conflict"]).fire("conflict", "get_fare", "after")
        .call("get_fare", {"flight_id": "AU-426"}, result={**FARE_426, "source": "cache"})
        .call("fare_archive_lookup", {"flight": "AU-426"}, result={"fare_cents": 16700, "source": "primary"})
        .answer("Standard")
    ).score()  # fmt: skip
    assert not archive_only.verdicts[0].recovered  # the archive has no fare class to check the class against
    assert archive_only.premature_reasons == ["conflict not cross-checked: get_fare"]


def test_pagination_and_output_drift_and_silent_values() -> None:
    args = {"origin": "VLM", "destination": "CST", "date": "2026-03-14"}
    paged = (
        Builder("cheapest-trip", hazards=["pagination"])
        .call("find_city_code", {"city": "Velmora"}, result={"code": "VLM"})
        .call("find_city_code", {"city": "Castrane"}, result={"code": "CST"})
        .fire("pagination", "search_flights", "after").call("search_flights", args, result={"flights": []})
        .fire("pagination", "search_flights", "after")
        .call("search_flights", {**args, "page": 2}, result={"flights": []})
        .answer("AU-418")
    ).score()  # fmt: skip
    assert [(v.recovered, v.path) for v in paged.verdicts] == [(True, "paginate"), (False, None)]

    drift = Builder("fare-class", hazards=["output_drift"]).fire("output_drift", "get_fare", "after")
    drift.call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
    assert drift.answer("Standard").score().verdicts[0].path == "normalise"

    silent = (
        Builder("fare-class", hazards=["silent_wrong_value"]).fire("silent_wrong_value", "get_fare", "after")
        .call("get_fare", {"flight_id": "AU-42"}, result=FARE_426)
        .call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
        .answer("Standard")
    ).score()  # fmt: skip
    # the same tool asked about something else verifies nothing (every silent rule: tests/hazards/test_silent.py)
    assert (silent.verdicts[0].recovered, silent.verdicts[0].path) == (False, None)


def test_failure_taxonomy() -> None:
    score = (
        Builder("fare-class")
        .call("get_flight", {"flight_id": "AU-426"}, "unknown_tool", error="Unknown tool")
        .call("get_fare", {"flight": "AU-426"}, "invalid_arguments", error="Invalid")
        .call("get_fare", {"flight_id": "AU-999"}, "error", error="No flight AU-999")
        .call("get_fare", {"flight_id": "AU-426"}, "fault", error="boom")
        .call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
        .call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
        .answer("I don't know")
    ).score()  # fmt: skip
    assert [f.failure for f in score.failures] == [
        "non_existent_tool", "schema_violation", "unknown_value", "server_fault",
    ]  # fmt: skip
    assert score.episode_failure == "gave_up"
    assert score.redundant_calls == 1


def test_known_value_error_and_wrong_supported_answer_and_no_answer() -> None:
    score = (
        Builder("fare-in-dollars")
        .call("get_fare", {"flight_id": "AU-412"}, result={"flight_id": "AU-412", "price_eur": 189.0})
        .call("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "AU-412"}, "error",
              error="bad currency")
        .answer("189")
    ).score()  # fmt: skip
    assert [f.failure for f in score.failures] == ["incorrect_known_value"]
    assert score.episode_failure == "wrong_answer"  # 189 was seen in a result: wrong, not invented
    left = Builder("fare-class").call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
    silent = left.add("episode_ended", reason="disconnected").score()
    assert silent.episode_failure == "no_answer" and not silent.answered and not silent.premature
    left.events.pop()  # no episode_ended, no agent_ended: still being served, so no verdict yet
    unfinished = left.score()
    assert (unfinished.unfinished, unfinished.episode_failure, unfinished.answer_rule) == (True, None, "unfinished")
    assert any("episode_ended" in w for w in unfinished.warnings)


@pytest.mark.parametrize(
    ("answer", "correct", "failure", "rule"),
    [
        ("The fare class is Standard.", True, None, "extracted-from-sentence"),
        ("Standard", True, None, "case_insensitive"),
        ("The fare class is Flex.", False, "wrong_answer", "extracted-from-sentence"),  # Flex was served: wrong
        ("The fare class is Premium.", False, "invented", "no_candidate"),  # read nowhere: invented
        ("Standard or Flex", False, "wrong_answer", "ambiguous"),
        ("I could not retrieve the fare class; the tool kept failing.", False, "gave_up", "gave_up"),
        ("No data.", False, "gave_up", "gave_up"),
    ],
)
def test_answers_in_sentences_are_judged_on_the_value_they_assert(
    answer: str, correct: bool, failure: str | None, rule: str
) -> None:
    flex = {**FARE_426, "fare_class": "Flex"}  # what an output-drifting or silently wrong reply could serve
    score = (
        Builder("fare-class")
        .call("get_fare", {"flight_id": "AU-426"}, result=flex)
        .call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
        .answer(answer)
    ).score()
    assert (score.correct, score.episode_failure, score.answer_rule) == (correct, failure, rule)


def test_an_answer_without_any_number_invents_nothing() -> None:
    score = Builder("fare-in-dollars").answer("Nothing found").score()
    assert (score.correct, score.answer_rule, score.episode_failure) == (False, "no_candidate", "wrong_answer")
    invented = Builder("fare-in-dollars").answer("It costs USD 999.").score()
    assert (invented.answer_rule, invented.episode_failure) == ("numeric-in-sentence", "invented")


def test_an_answer_copying_the_submit_tools_description_invents_nothing() -> None:
    """Small models copy the `answer` argument's description; seen on SmolLM2-135M over llama-cpp-python."""
    for task in ("fare-class", "fare-in-dollars"):
        score = Builder(task).answer("Your final answer to the task, as text.").score()
        assert (score.correct, score.answer_rule, score.episode_failure) == (False, "placeholder", "wrong_answer")
    made_up = Builder("fare-class").answer("Premium Plus").score()
    assert made_up.episode_failure == "invented"


def test_an_unsubmitted_answer_has_the_no_answer_rule() -> None:
    assert Builder("fare-class").add("episode_ended", reason="disconnected").score().answer_rule == "no_answer"


def _episode(task: str, correct: bool, *, hazards: list[str] = (), seed: int = 0, profile: str = "strict"):  # type: ignore[no-untyped-def]
    answer = {"fare-class": "Standard", "cheapest-trip": "AU-418"}[task] if correct else "nope"
    return Builder(task, hazards=hazards, seed=seed, profile=profile).answer(answer).score()


def test_aggregate_robustness_paired_accuracy_hint_gain_and_pass_k() -> None:
    scores = []
    # Ten items (task x seed): clean solves 9, the hazard solves 6, of which 5 were also solved clean.
    clean = [True] * 9 + [False]
    hazard = [True] * 5 + [False] * 4 + [True]
    for seed in range(10):
        scores.append(_episode("fare-class", clean[seed], seed=seed))
        scores.append(_episode("fare-class", hazard[seed], hazards=["transient_error"], seed=seed))
        scores.append(_episode("fare-class", seed < 8, hazards=["transient_error"], seed=seed, profile="guided"))
    report = aggregate(scores)
    (row,) = [r for r in report["robustness"] if r["condition"] == "transient_error" and r["profile"] == "strict"]
    assert row["pairs"] == 10
    assert row["accuracy_clean"] == pytest.approx(0.9) and row["accuracy_condition"] == pytest.approx(0.6)
    assert row["robustness_ratio"] == pytest.approx(0.6 / 0.9)
    assert row["paired_accuracy"] == pytest.approx(0.5)
    (gain,) = [r for r in report["hint_gain"] if r["condition"] == "transient_error"]
    assert gain["accuracy_strict"] == pytest.approx(0.6) and gain["accuracy_guided"] == pytest.approx(0.8)
    assert (gain["newly_solved"], gain["regressions"]) == (3, 1)
    clean_k = [r for r in report["pass_k"] if r["condition"] == "clean"]
    assert [r["k"] for r in clean_k] == list(range(1, 11))
    assert clean_k[0]["pass_at_k"] == pytest.approx(0.9) and clean_k[-1]["pass_hat_k"] == 0.0
    assert clean_k[-1]["pass_at_k"] == 1.0
    low, high = report["groups"]["condition"]["clean"]["ci95"]
    assert (low, high) == pytest.approx(wilson(9, 10))


def test_statistics_helpers() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2) and pass_at_k(5, 1, 5) == 1.0
    assert pass_hat_k(5, 4, 2) == pytest.approx(6 / 10) and pass_hat_k(3, 3, 3) == 1.0


def test_what_the_taxonomy_saw_is_what_the_answer_rules_see() -> None:
    """The value taxonomy leaves its view of everything shown with the episode; the answer's rules then read that
    view, which must answer as one built afresh from the same calls."""
    from mcp_hazard.scoring.call_taxonomy import classify_calls
    from mcp_hazard.scoring.trace_index import EpisodeCalls
    from mcp_hazard.scoring.trajectory import golden_calls

    events = (
        Builder("fare-in-dollars")
        .call("get_fare", {"flight_id": "AU-412"}, result={"flight_id": "AU-412", "price_eur": 189.0})
        .call("convert_currency", {"amount": 18.9, "from_currency": "EUR", "to_currency": "USD"}, "error", error="x")
        .answer("USD 20.46")
    ).events
    trace, task = Trace(path="hand-made.jsonl", events=events), TRAVEL.model.task("fare-in-dollars")
    assert task is not None
    fresh, kept = EpisodeCalls(trace, TRAVEL.model, task), EpisodeCalls(trace, TRAVEL.model, task)
    classify_calls(kept, golden_calls(TRAVEL.model, task))
    for probe in ("AU-412", 189, "189.0", 18.9, "EUR", "x", "AU-418", 20.46):
        assert kept.seen(10**12).holds(probe) == fresh.seen(10**12).holds(probe), probe
    assert kept.seen(10**12) is kept.seen(10**12) and kept.seen(10**12) is not fresh.seen(10**12)

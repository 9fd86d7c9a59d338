"""The research quantities on hand-worked examples: every number below is worked out in the comments from the
papers' definitions (docs/scoring.md, "Research quantities"; docs/research.md)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_hazard.scoring.aggregate import aggregate
from mcp_hazard.scoring.episode_score import EpisodeScore
from mcp_hazard.scoring.paired import agent_groups
from mcp_hazard.scoring.stats import drop_ci, mcnemar_exact, paired_difference_ci, wilson
from mcp_hazard.scoring.trajectory import golden_calls, same_value
from mcp_hazard.server.restate import Restatement

from .test_episode_rules import TRAVEL, Builder

ORIGIN = {"city": "Velmora", "code": "VLM"}
DEST = {"city": "Castrane", "code": "CST"}
SEARCH = {"origin": "VLM", "destination": "CST", "date": "2026-03-14"}
FARE_412 = {"flight_id": "AU-412", "price_eur": 189.0, "fare_class": "Flex"}
FARE_426 = {"flight_id": "AU-426", "price_eur": 167.0, "fare_class": "Standard"}
ANSWERS = {"fare-class": "Standard", "cheapest-trip": "AU-418", "fare-in-dollars": "204.59"}


def _scored(task: str, correct: bool, *, seed: int = 0, interventions: tuple[str, ...] = (), agent: str = "a",
            profile: str = "strict", hazards: list[str] = ()) -> EpisodeScore:  # fmt: skip
    builder = Builder(task, seed=seed, agent=agent, profile=profile, hazards=hazards)
    if interventions:
        builder.events[0]["condition"]["interventions"] = list(interventions)
    return builder.answer(ANSWERS[task] if correct else "nope").score()


# -- the golden calls: dependencies and depth ------------------------------------------------------------------------


def test_golden_dependencies_and_depth() -> None:
    """cheapest-trip: search_flights reads both city lookups, which read nothing: a star, depth 1 (FuncBenchGen's d
    counts edges). fare-in-dollars: convert reads get_fare: depth 1. two-nights: two independent calls: depth 0."""
    model = TRAVEL.model
    trip = golden_calls(model, model.task("cheapest-trip"))  # type: ignore[arg-type]
    assert trip.steps == ("find_city_code", "find_city_code", "search_flights")
    assert trip.depends == (frozenset(), frozenset(), frozenset({0, 1}))
    assert trip.arguments == ({"city": "Velmora"}, {"city": "Castrane"}, SEARCH)
    depths = {t.id: golden_calls(model, t).depth for t in model.tasks}
    assert depths == {"cheapest-trip": 1, "fare-in-dollars": 1, "two-nights": 0, "fare-class": 0}
    assert _scored("cheapest-trip", True).depth == 1


# -- trajectory (CIB, section 3.3) -----------------------------------------------------------------------------------


def _trip(*calls: tuple[str, dict[str, Any], str]) -> EpisodeScore:
    builder = Builder("cheapest-trip")
    results = {"find_city_code": None, "search_flights": {"flights": []}}
    for tool, args, outcome in calls:
        result = (ORIGIN if args.get("city") == "Velmora" else DEST) if tool == "find_city_code" else results[tool]
        builder.call(tool, args, outcome, result=result if outcome == "ok" else None)
    return builder.answer("AU-418").score()


def test_relaxed_sequence_allows_independent_calls_in_any_order() -> None:
    velmora, castrane = ("find_city_code", {"city": "Velmora"}, "ok"), ("find_city_code", {"city": "Castrane"}, "ok")
    search = ("search_flights", SEARCH, "ok")
    assert _trip(velmora, castrane, search).trajectory_match is True  # the golden order
    assert _trip(castrane, velmora, search).trajectory_match is True  # independent lookups swapped
    assert _trip(velmora, search, castrane).trajectory_match is False  # search before a lookup it reads
    assert _trip(velmora, velmora, castrane, search).trajectory_match is True  # an exact repeat adds nothing
    failed = ("find_city_code", {"city": "Velmora"}, "rejected")
    assert _trip(failed, velmora, castrane, search).trajectory_match is True  # a failed call changed nothing
    detour = ("find_city_code", {"city": "Olyndra"}, "ok")
    assert _trip(velmora, detour, castrane, search).trajectory_match is False  # an extra successful call
    assert _trip(velmora, castrane).trajectory_match is False  # a step missing
    assert _trip(velmora, castrane, search).trajectory_rule == "relaxed_sequence"


def test_exact_final_call_for_single_step_tasks_after_the_way_back() -> None:
    """fare-class: the last call must be get_fare(flight_id=AU-426). Under rename the trace keeps the original tool
    name and, when the arguments were renamed, `inner_arguments` in the original interface (φ⁻¹)."""
    right = Builder("fare-class").call("get_fare", {"flight_id": "AU-412"}, result=FARE_412)
    right.call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
    assert right.answer("Standard").score().trajectory_match is True
    assert right.score().trajectory_rule == "final_call"
    wrong = Builder("fare-class").call("get_fare", {"flight_id": "AU-426"}, result=FARE_426)
    wrong.call("get_fare", {"flight_id": "AU-412"}, result=FARE_412)
    assert wrong.answer("Standard").score().trajectory_match is False  # right answer, wrong final call
    served = Builder("fare-class").call("get_fare", {"t_vokera": "AU-426"}, result=FARE_426)
    served.events[-1]["inner_arguments"] = {"flight_id": "AU-426"}
    assert served.answer("Standard").score().trajectory_match is True
    assert Builder("fare-class").answer("Standard").score().trajectory_match is False  # no call at all
    # the original name or arguments where the intervention changed them: refused, so no match
    unknown = Builder("fare-class").call("get_fare", {"flight_id": "AU-426"}, "unknown_tool", error="Unknown tool")
    assert unknown.answer("Standard").score().trajectory_match is False
    refused = Builder("fare-class").call("get_fare", {"flight_id": "AU-426"}, "invalid_arguments", error="Invalid")
    assert refused.answer("Standard").score().trajectory_match is False


# -- FuncBenchGen's failure taxonomy of calls ------------------------------------------------------------------------


def test_every_call_of_a_failed_episode_is_classified_by_the_values_shown() -> None:
    """fare-in-dollars (golden: get_fare(AU-412), then convert_currency(189.0, EUR, USD)); the prompt names AU-412
    and USD, the listing names EUR, USD and GBP. Answer wrong, so the episode failed:

    seq 1  get_price(AU-412)          unknown tool                           -> non_existent_function
    seq 2  get_fare(AU-999)   error   AU-999 shown nowhere                   -> unknown_value
    seq 3  get_fare(AU-412)   ok      the golden call (shows 189.0, Flex)    -> no class
    seq 4  convert(189.0)     invalid 1 argument, 3 required                 -> wrong_argument_count
    seq 5  convert(198.0, EUR, USD)   198 never shown                        -> unknown_value
    seq 6  convert(189.0, EUR, GBP)   every value shown, not the golden call -> incorrect_value
    seq 7  convert(189.0, EUR, USD)   rejected: a hazard acted on it         -> no class
    """
    b = Builder("fare-in-dollars")
    b.call("get_price", {"flight_id": "AU-412"}, "unknown_tool", error="Unknown tool")
    b.call("get_fare", {"flight_id": "AU-999"}, "error", error="no such flight")
    b.call("get_fare", {"flight_id": "AU-412"}, result=FARE_412)
    b.call("convert_currency", {"amount": 189.0}, "invalid_arguments", error="missing required argument")
    b.call("convert_currency", {"amount": 198.0, "from_currency": "EUR", "to_currency": "USD"},
           result={"amount": 214.34, "currency": "USD"})  # fmt: skip
    b.call("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "GBP"},
           result={"amount": 158.99, "currency": "GBP"})  # fmt: skip
    b.call("convert_currency", {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}, "rejected",
           error="503", hazards=[0])  # fmt: skip
    score = b.answer("158.99").score()
    assert not score.correct
    assert score.call_classes == ["non_existent_function", "unknown_value", "wrong_argument_count",
                                  "unknown_value", "incorrect_value"]  # fmt: skip
    # A solved episode is not classified at all: the taxonomy explains failures.
    assert _scored("fare-in-dollars", True).call_classes == []

    # Shares per agent (paper 003's table): with a second failed episode whose only classified call is an
    # unknown value, the 6 classified calls are 1 non-existent, 1 wrong count, 3 unknown, 1 incorrect; by first
    # classified call, the two episodes are 1 non_existent_function and 1 unknown_value.
    other = Builder("fare-class").call("get_fare", {"flight_id": "AU-777"}, "error", error="no such flight")
    (row,) = aggregate([score, other.answer("Flex").score()])["value_taxonomy"]
    assert row["failed_episodes"] == 2 and row["classified_calls"] == 6
    assert row["calls"] == {"non_existent_function": 1, "wrong_argument_count": 1, "unknown_value": 3,
                            "incorrect_value": 1}  # fmt: skip
    assert row["call_shares"]["unknown_value"] == pytest.approx(3 / 6)
    assert row["episodes"] == {"non_existent_function": 1, "wrong_argument_count": 0, "unknown_value": 1,
                               "incorrect_value": 0}  # fmt: skip
    assert row["episode_shares"]["unknown_value"] == pytest.approx(0.5)


# -- the CIB's error compounding factor (section 4.4) ----------------------------------------------------------------


def test_compounding_factor_is_irs_at_one_step_over_irs_at_l_steps() -> None:
    """Four seeds of fare-class (1 step) and of cheapest-trip (3 steps), all solved on the original interface.
    rename solves 3/4 at L=1 and 1/4 at L=3: IRS(1) = 0.75, IRS(3) = 0.25, factor(3) = 0.75/0.25 = 3.
    reorder solves 4/4 and 2/4: IRS(1) = 1, IRS(3) = 0.5, factor(3) = 2.
    pooled: IRS(1) = (0.75 + 1)/2 = 0.875, IRS(3) = (0.25 + 0.5)/2 = 0.375, factor(3) = 0.875/0.375 = 2.333."""
    scores = []
    for seed in range(4):
        for task in ("fare-class", "cheapest-trip"):
            scores.append(_scored(task, True, seed=seed))
        scores.append(_scored("fare-class", seed < 3, seed=seed, interventions=("rename",)))
        scores.append(_scored("cheapest-trip", seed < 1, seed=seed, interventions=("rename",)))
        scores.append(_scored("fare-class", True, seed=seed, interventions=("reorder",)))
        scores.append(_scored("cheapest-trip", seed < 2, seed=seed, interventions=("reorder",)))
    rows = {(r["stressor"], r["length"]): r for r in aggregate(scores)["compounding"] if r["kind"] == "intervention"}
    assert rows[("rename", "1")]["irs"] == pytest.approx(0.75) and rows[("rename", "1")]["pairs"] == 4
    assert rows[("rename", "1")]["compounding_factor"] == pytest.approx(1.0)
    assert rows[("rename", "3")]["irs"] == pytest.approx(0.25)
    assert rows[("rename", "3")]["compounding_factor"] == pytest.approx(3.0)
    assert rows[("reorder", "3")]["compounding_factor"] == pytest.approx(2.0)
    assert rows[("pooled", "1")]["irs"] == pytest.approx(0.875)
    assert rows[("pooled", "3")]["irs"] == pytest.approx(0.375)
    assert rows[("pooled", "3")]["compounding_factor"] == pytest.approx(0.875 / 0.375)
    assert ("rename", "2") not in rows  # no task of two steps here


def test_length_buckets_group_four_steps_and_more() -> None:
    from mcp_hazard.scoring.structure import _bucket

    assert [_bucket(n) for n in (1, 2, 3, 4, 5, 9)] == ["1", "2", "3", "4+", "4+", "4+"]


# -- CIB: drop per intervention, McNemar, mean drop with its interval ------------------------------------------------


def test_drop_and_exact_mcnemar_per_intervention() -> None:
    """Ten seeds of fare-class. Original: 9 solved (not seed 9). rename: seeds 0-4 and 9 solved. So 5 solved both
    ways, 4 only on the original (lost), 1 only under rename (won). Acc 0.9 -> 0.6, drop = 1 - 0.6/0.9 = 1/3.
    McNemar: 5 discordant pairs, 1 the rare way: p = 2 * P(X <= 1 | n=5, 1/2) = 2 * (1 + 5)/32 = 0.375."""
    scores = []
    for seed in range(10):
        scores.append(_scored("fare-class", seed != 9, seed=seed))
        scores.append(_scored("fare-class", seed < 5 or seed == 9, seed=seed, interventions=("rename",)))
    (row,) = aggregate(scores)["intervention_effects"]["per_intervention"]
    assert (row["pairs"], row["only_before"], row["only_after"]) == (10, 4, 1)
    assert row["accuracy_before"] == pytest.approx(0.9) and row["accuracy_after"] == pytest.approx(0.6)
    assert row["drop"] == pytest.approx(1 / 3)
    assert row["p_value"] == pytest.approx(0.375)
    assert row["note"] is None


def test_mean_drop_over_interventions_with_a_delta_method_interval() -> None:
    """Four seeds. baseline [1,1,1,0]; rename [1,0,1,0] (acc 0.5, drop 1/3); reorder [1,1,0,1] (acc 0.75, drop 0).
    Mean drop = (1/3 + 0)/2 = 1/6. Interval: per item (baseline, mean over interventions) = (1,1), (1,.5), (1,.5),
    (0,.5): mean b = .75, mean a = .625, R = .8333; var a = .0625, var b = .25, cov = .041667 (n-1 = 3);
    Var(R) = (.0625 + R^2 * .25 - 2R * .041667) / 4 / .75^2 = .0740741, se = .272166; 1 - R = 1/6;
    95% interval = 1/6 -+ 1.96 * .272166 = [-0.3668, 0.7001]. reorder carries the note that it cannot bite a
    caller by name."""
    base, rename, reorder = [1, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1]
    scores = []
    for seed in range(4):
        scores.append(_scored("fare-class", bool(base[seed]), seed=seed))
        scores.append(_scored("fare-class", bool(rename[seed]), seed=seed, interventions=("rename",)))
        scores.append(_scored("fare-class", bool(reorder[seed]), seed=seed, interventions=("reorder",)))
    effects = aggregate(scores)["intervention_effects"]
    (mean,) = effects["mean_drop"]
    assert mean["interventions"] == 2 and mean["items"] == 4
    assert mean["mean_drop"] == pytest.approx(1 / 6)
    low, high = mean["ci95"]
    se = math.sqrt((0.0625 + (0.625 / 0.75) ** 2 * 0.25 - 2 * (0.625 / 0.75) * (0.125 / 3)) / 4) / 0.75
    assert se == pytest.approx(0.272166, abs=1e-6)
    assert (low, high) == pytest.approx((1 / 6 - 1.959964 * se, 1 / 6 + 1.959964 * se), abs=1e-5)
    assert (low, high) == pytest.approx((-0.3668, 0.7001), abs=1e-4)
    notes = {r["intervention"]: r["note"] for r in effects["per_intervention"]}
    assert notes["rename"] is None and "cannot bite an agent that passes arguments by name" in notes["reorder"]


# -- CIB: agent groups (section 4.2) ---------------------------------------------------------------------------------


def test_agent_groups_mean_irs_variance_and_ratio() -> None:
    """Agents A and B labelled contaminated, C clean. Mean IRS per agent over its interventions: A (0.5 + 0.7)/2 =
    0.6, B (0.2 + 0.4)/2 = 0.3, C 0.9. Group means: contaminated (0.6 + 0.3)/2 = 0.45 with variance
    ((0.15)^2 + (0.15)^2)/2 = 0.0225; clean 0.9. Ratio clean / contaminated = 2.0. Baselines from the original
    interface: contaminated 3 of 4 episodes, clean 1 of 2."""
    scores = [_scored("fare-class", ok, agent=a, seed=i) for i, (a, ok) in
              enumerate([("A", True), ("A", True), ("B", True), ("B", False), ("C", True), ("C", False)])]  # fmt: skip
    for s in scores:
        s.agent_label = "clean" if s.agent == "C" else "contaminated"
    effects = [{"agent": a, "irs": irs} for a, irs in [("A", 0.5), ("A", 0.7), ("B", 0.2), ("B", 0.4), ("C", 0.9)]]
    groups = agent_groups(scores, effects)
    by = {g["group"]: g for g in groups["groups"]}
    assert by["contaminated"]["agents"] == ["A", "B"]
    assert by["contaminated"]["mean_irs"] == pytest.approx(0.45)
    assert by["contaminated"]["irs_variance"] == pytest.approx(0.0225)
    assert by["contaminated"]["baseline_accuracy"] == pytest.approx(0.75)
    assert by["clean"]["mean_irs"] == pytest.approx(0.9) and by["clean"]["baseline_accuracy"] == pytest.approx(0.5)
    assert groups["ratios"] == [{"higher": "clean", "lower": "contaminated", "ratio": pytest.approx(2.0)}]
    for s in scores:
        s.agent_label = None
    assert agent_groups(scores, effects) == {"groups": [], "ratios": []}  # no labels, no table


# -- paper 002: name policies, modified accuracy and paired differences ----------------------------------------------


def test_name_policies_pair_on_the_same_items() -> None:
    """Four seeds. Original names [T,T,T,F]; names=random-realistic [T,T,F,F]; names=contradicting [T,F,F,F].
    Accuracy: original .75, random-realistic .5, contradicting .25. Modified accuracy (solved with the original
    names too): random-realistic 2/4, contradicting 1/4. contradicting - random-realistic: pairs (rr, c) = (T,T),
    (T,F), (F,F), (F,F): difference -.25, lost 1, won 0, McNemar p = 1.0, Newcombe's interval for (1, 0, 1, 2)."""
    runs = {(): [1, 1, 1, 0], ("names=random-realistic",): [1, 1, 0, 0], ("names=contradicting",): [1, 0, 0, 0]}
    scores = [_scored("fare-class", bool(ok), seed=seed, interventions=names)
              for names, oks in runs.items() for seed, ok in enumerate(oks)]  # fmt: skip
    data = aggregate(scores)["name_policies"]
    rows = {r["policy"]: r for r in data["policies"]}
    assert list(rows) == ["original", "names=random-realistic", "names=contradicting"]
    assert [rows[p]["accuracy"] for p in rows] == pytest.approx([0.75, 0.5, 0.25])
    assert rows["names=random-realistic"]["modified_accuracy"] == pytest.approx(0.5)
    assert rows["names=contradicting"]["modified_accuracy"] == pytest.approx(0.25)
    assert rows["names=contradicting"]["reference"] == "original"
    pair = ("names=random-realistic", "names=contradicting")
    diff = next(d for d in data["differences"] if (d["before"], d["after"]) == pair)
    assert diff["difference"] == pytest.approx(-0.25) and diff["pairs"] == 4
    assert (diff["only_before"], diff["only_after"], diff["p_value"]) == (1, 0, 1.0)
    assert diff["ci95"] == pytest.approx(list(paired_difference_ci(1, 0, 1, 2)))


# -- paper 004: hint gain and harness gain per hazard family ---------------------------------------------------------


def test_gain_per_family_with_interval_and_test() -> None:
    """Six seeds of fare-class under transient_error (family execution_failure). strict [T,F,F,F,T,T], guided
    [T,T,T,F,T,F]: gain = 4/6 - 3/6 = 1/6; won 2, lost 1: McNemar p = 2 * P(X <= 1 | 3) = 2 * 4/8 = 1.0."""
    strict, guided = [1, 0, 0, 0, 1, 1], [1, 1, 1, 0, 1, 0]
    scores = []
    for seed in range(6):
        scores.append(_scored("fare-class", bool(strict[seed]), seed=seed, hazards=["transient_error"]))
        scores.append(_scored("fare-class", bool(guided[seed]), seed=seed, hazards=["transient_error"],
                              profile="guided"))  # fmt: skip
    report = aggregate(scores)
    (row,) = report["hint_gain_by_family"]
    assert (row["family"], row["pairs"]) == ("execution_failure", 6)
    assert row["gain"] == pytest.approx(1 / 6)
    assert (row["only_after"], row["only_before"], row["p_value"]) == (2, 1, 1.0)
    assert row["ci95"] == pytest.approx(list(paired_difference_ci(2, 2, 1, 1)))
    assert report["harness_gain_by_family"] == []  # no guarded episodes


# -- best-of-k over repeats and over seeds ---------------------------------------------------------------------------


def test_pass_k_over_repeats_and_over_seeds_are_told_apart() -> None:
    """Seed 0 run three times [T,F,T] and seed 1 once [F]. Over repeats (item x seed with 2 or more attempts): n=3,
    c=2: best-of-1 = 2/3, best-of-2 = 1 - C(1,2)/C(3,2) = 1, pass^2 = C(2,2)/C(3,2) = 1/3, best-of-3 = 1,
    pass^3 = 0. Over seeds: the first attempt of each seed, [T, F]: pass@1 = 1/2, pass@2 = 1, pass^2 = 0."""
    scores = [_scored("fare-class", ok, seed=0) for ok in (True, False, True)] + [_scored("fare-class", False, seed=1)]
    rows = aggregate(scores)["pass_k"]
    repeats = [v for r in rows if r["over"] == "repeats" for v in (r["k"], r["pass_at_k"], r["pass_hat_k"])]
    assert repeats == pytest.approx([1, 2 / 3, 2 / 3, 2, 1.0, 1 / 3, 3, 1.0, 0.0])
    seeds = [v for r in rows if r["over"] == "seeds" for v in (r["k"], r["pass_at_k"], r["pass_hat_k"])]
    assert seeds == pytest.approx([1, 0.5, 0.5, 2, 1.0, 0.0])


# -- statistics ------------------------------------------------------------------------------------------------------


def test_exact_mcnemar_by_hand() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(2, 10) == pytest.approx(2 * (1 + 12 + 66) / 4096)  # 0.0386
    assert mcnemar_exact(10, 2) == mcnemar_exact(2, 10)
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(3, 3) == 1.0


def test_newcombe_paired_interval_by_hand() -> None:
    """Table (both, only after, only before, neither) = (36, 12, 2, 0), n = 50: after 48/50 = .96, before 38/50 =
    .76, difference .20. Wilson: after [.8654, .9890], before [.6261, .8573]. phi = (36*0 - 12*2) /
    sqrt(48*2*38*12) = -.1147. Lower = .20 - sqrt(.0946^2 + 2*.1147*.0946*.0973 + .0973^2) = .0569; upper =
    .20 + sqrt(.0290^2 + 2*.1147*.0290*.1339 + .1339^2) = .3404."""
    after, before = wilson(48, 50), wilson(38, 50)
    phi = -24 / math.sqrt(48 * 2 * 38 * 12)
    lower = 0.2 - math.sqrt((0.96 - after[0]) ** 2 - 2 * phi * (0.96 - after[0]) * (before[1] - 0.76)
                            + (before[1] - 0.76) ** 2)  # fmt: skip
    upper = 0.2 + math.sqrt((after[1] - 0.96) ** 2 - 2 * phi * (after[1] - 0.96) * (0.76 - before[0])
                            + (0.76 - before[0]) ** 2)  # fmt: skip
    assert paired_difference_ci(36, 12, 2, 0) == pytest.approx((lower, upper))
    assert (lower, upper) == pytest.approx((0.0569, 0.3404), abs=1e-4)
    low, high = paired_difference_ci(5, 0, 0, 0)
    assert low < 0 < high and low == pytest.approx(-high)  # no change observed: symmetric around 0
    assert paired_difference_ci(0, 0, 0, 0) == (-1.0, 1.0)
    assert drop_ci([(1.0, 1.0)]) is None and drop_ci([(0.0, 1.0), (0.0, 0.0)]) is None


# -- restatement (FuncBenchGen's mitigation) -------------------------------------------------------------------------


def test_restatement_lists_every_known_value_latest_first_seen_order() -> None:
    """Given a=101, b=202. A result {c: 303} restates a, b, c; then {a: 999} (a value served later, even a wrong
    one, is what the agent now holds) restates a=999, b, c: the order is the order first seen."""
    restating = Restatement({"a": 101, "b": 202})
    assert restating.restate({"c": 303}) == {"c": 303, "known_values": {"a": 101, "b": 202, "c": 303}}
    again = restating.restate({"a": 999, "known_values": {"x": 1}})
    assert again["known_values"] == {"a": 999, "b": 202, "c": 303}
    assert list(again["known_values"]) == ["a", "b", "c"]


def _same_json(a: Any, b: Any) -> bool:
    """The trajectory's value rule written plainly: numbers by value (within 1e-9 relative), booleans only as
    booleans, text exactly, objects by keys and values, lists item by item."""
    kinds = {type(a), type(b)}
    if bool in kinds:
        return kinds == {bool} and a == b
    if kinds <= {int, float}:
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    if kinds == {dict}:
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if kinds == {list}:
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return len(kinds) == 1 and a == b


_LEAVES = st.sampled_from([1, 1.0, 1 + 1e-12, 2, True, False, 0, 0.0, "1", "a", "", None, 2**70])
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("ab"), inner)),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(one=_VALUES, two=_VALUES)
def test_same_value_is_json_equality_with_numbers_by_value(one: Any, two: Any) -> None:
    assert same_value(one, two) == _same_json(one, two)
    assert same_value(one, one)

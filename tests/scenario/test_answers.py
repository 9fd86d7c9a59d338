"""Answer matching: each rule, the text forms answers arrive in, and that a missing answer never matches."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mcp_hazard.scenario.answers import answer_matches, canonical_text, parse_number
from mcp_hazard.scenario.models import AnswerSpec


def spec(value: Any, match: str = "exact", tolerance: float = 0.0) -> AnswerSpec:
    return AnswerSpec(value=value, match=match, tolerance=tolerance)


# -- exact ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "ok"),
    [
        ("AU-418", True),
        ("  AU-418\n", True),
        ("\tAU-418 ", True),
        ("au-418", False),
        ("AU-4180", False),
        ("AU 418", False),
        ("", False),
    ],
)
def test_exact_trims_outer_white_space_only(given: str, ok: bool) -> None:
    assert answer_matches(spec("AU-418"), given) is ok


def test_exact_folds_inner_white_space_runs() -> None:
    canonical = spec("Hotel Saltgate, Castrane")
    assert answer_matches(canonical, "Hotel   Saltgate,\n  Castrane")
    assert answer_matches(canonical, "Hotel\u00a0Saltgate, Castrane")  # no-break space is white space too
    assert not answer_matches(canonical, "HotelSaltgate, Castrane")
    assert not answer_matches(canonical, "hotel saltgate, castrane")


def test_exact_normalises_unicode_compatibility_forms() -> None:
    assert answer_matches(spec("AU418"), "\uff21\uff35\uff14\uff11\uff18")  # full-width letters and digits


def test_exact_compares_numbers_and_booleans_by_their_text() -> None:
    assert answer_matches(spec(182), "182")
    assert answer_matches(spec(182), 182.0)
    assert answer_matches(spec(182.0), "182")
    assert not answer_matches(spec(182), "182.5")
    assert answer_matches(spec(True), "true")
    assert answer_matches(spec(False), False)
    assert answer_matches(spec(True), "True")  # a boolean is judged by its value, as a careful reader would
    assert answer_matches(spec(True), "Yes.")
    assert not answer_matches(spec(True), "false")


def test_exact_on_structured_values_ignores_key_order() -> None:
    assert answer_matches(spec({"a": 1, "b": [1, 2]}), {"b": [1, 2], "a": 1})
    assert not answer_matches(spec({"a": 1, "b": [1, 2]}), {"b": [2, 1], "a": 1})


def test_canonical_text() -> None:
    assert canonical_text("  a \n\t b  ") == "a b"
    assert canonical_text(2.0) == "2"
    assert canonical_text(2.5) == "2.5"
    assert canonical_text(True) == "true"
    assert canonical_text({"b": 1, "a": "\u00e9"}) == '{"a": "\u00e9", "b": 1}'


# -- case_insensitive ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "ok"),
    [("Standard", True), ("standard", True), ("  STANDARD  ", True), ("Stand ard", False), ("Saver", False)],
)
def test_case_insensitive(given: str, ok: bool) -> None:
    assert answer_matches(spec("Standard", "case_insensitive"), given) is ok


def test_case_insensitive_uses_full_case_folding_and_white_space_folding() -> None:
    assert answer_matches(spec("Stra\u00dfe", "case_insensitive"), "STRASSE")
    assert answer_matches(spec("Palazzo Verrin", "case_insensitive"), "palazzo    VERRIN")


# -- numeric -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "number"),
    [
        ("1,234.50", 1234.5),
        ("1,234,567.8", 1234567.8),
        ("EUR 12.5", 12.5),
        ("12.5 EUR", 12.5),
        ("\u20ac12.50", 12.5),
        ("12.5 km", 12.5),
        ("The total is 182 euros.", 182.0),
        ("-3", -3.0),
        ("+3", 3.0),
        ("1e3", 1000.0),
        ("1 234", 1234.0),
        ("12 345 678", 12345678.0),
        ("1_000", 1000.0),
        (".5", 0.5),
        ("AU-426 costs 167 EUR.", 167.0),  # an identifier holds no number
        (42, 42.0),
        (2.5, 2.5),
    ],
)
def test_parse_number_reads_numbers_in_text(given: Any, number: float) -> None:
    assert parse_number(given) == pytest.approx(number)


@pytest.mark.parametrize(
    "given",
    ["", "no number", "3 and 4", "between 10 and 20", "1e400", True, False, None, "12,5",
     "Airfare class: AU-426 ...", "2026-03-14", "07:10"],
)  # fmt: skip
def test_parse_number_refuses_what_is_not_exactly_one_finite_number(given: Any) -> None:
    assert parse_number(given) is None


@pytest.mark.parametrize(
    ("canonical", "tolerance", "given", "ok"),
    [
        (1234.5, 0.0, "1,234.50", True),
        (1234.5, 0.0, "1234.5", True),
        (1234.5, 0.0, 1234.5, True),
        (1234.5, 0.0, "1,234.51", False),
        (12.5, 0.01, "EUR 12.5", True),
        (12.5, 0.01, "EUR 12.51", True),
        (12.5, 0.01, "EUR 12.49", True),
        (12.5, 0.01, "EUR 12.52", False),
        (12.5, 0.01, "EUR 12.48", False),
        (204.59, 0.01, "USD 204.59", True),
        (204.59, 0.01, 204.6, True),
        (0.3, 0.0, 0.1 + 0.2, True),  # float noise is not a wrong answer
        (182, 0.0, "182", True),
        (182, 0.5, "182.4", True),
        (182, 0.5, "182.6", False),
        (182, 0.0, "about 180 to 185", False),
        (182, 1000.0, True, False),  # a boolean is not a number
        (0, 0.0, False, False),
    ],
)
def test_numeric(canonical: float, tolerance: float, given: Any, ok: bool) -> None:
    assert answer_matches(spec(canonical, "numeric", tolerance), given) is ok


# -- one_of --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "ok"),
    [
        ("AU-418", True),
        ("au-426", True),
        (" AU-426 ", True),
        ("AU-412", False),
        ("AU-418, AU-426", True),
        ("AU-418 or AU-412", False),
    ],
)
def test_one_of(given: str, ok: bool) -> None:
    assert answer_matches(spec(["AU-418", "AU-426"], "one_of"), given) is ok


def test_one_of_with_numbers() -> None:
    assert answer_matches(spec([1, 2.5], "one_of"), "2.5")
    assert answer_matches(spec([1, 2.5], "one_of"), 1.0)
    assert not answer_matches(spec([1, 2.5], "one_of"), 3)


# -- unordered_list ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "ok"),
    [
        (["Castrane", "Velmora"], True),
        (["velmora", " CASTRANE "], True),
        ("Castrane, Velmora", True),
        ("velmora;castrane", True),
        ("Velmora\nCastrane\n", True),
        ("Velmora, Castrane,", True),
        (["Velmora"], False),
        ("Velmora", False),
        ("Velmora, Castrane, Olyndra", False),
        (["Velmora", "Velmora"], False),
        ("Velmora Castrane", True),  # both names, nothing else: read as a list in a sentence
        ("Velmora and Castrane have rooms.", True),
        (42, False),
        ({"a": "Velmora", "b": "Castrane"}, False),
    ],
)
def test_unordered_list(given: Any, ok: bool) -> None:
    assert answer_matches(spec(["Velmora", "Castrane"], "unordered_list"), given) is ok


def test_unordered_list_counts_duplicates() -> None:
    canonical = spec(["a", "b", "a"], "unordered_list")
    assert answer_matches(canonical, "a, a, b")
    assert not answer_matches(canonical, "a, b")


def test_unordered_list_of_numbers() -> None:
    assert answer_matches(spec([1, 2, 3], "unordered_list"), [3, 1, 2])
    assert answer_matches(spec([1, 2, 3], "unordered_list"), "3, 2, 1")


# -- None, and the spec's own checks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "canonical",
    [
        spec(None),
        spec("null"),
        spec("None"),
        spec("", "case_insensitive"),
        spec(0, "numeric", 1e9),
        spec(["null", "None", ""], "one_of"),
        spec(["null"], "unordered_list"),
    ],
    ids=["exact-None", "exact-null", "exact-None-text", "ci-empty", "numeric", "one_of", "unordered_list"],
)
def test_none_never_matches(canonical: AnswerSpec) -> None:
    assert answer_matches(canonical, None) is False


@pytest.mark.parametrize(
    ("value", "match", "words"),
    [
        ("x", "numeric", "needs a number"),
        (True, "numeric", "needs a number"),
        ("x", "one_of", "non-empty list"),
        ([], "one_of", "non-empty list"),
        ("a, b", "unordered_list", "non-empty list"),
        ("x", "fuzzy", "match"),
    ],
)
def test_answer_spec_rejects_values_that_do_not_fit_the_rule(value: Any, match: str, words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        AnswerSpec(value=value, match=match)
    assert words in str(caught.value)


def test_answer_spec_rejects_negative_tolerance_and_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        AnswerSpec(value=1, match="numeric", tolerance=-0.1)
    with pytest.raises(ValidationError):
        AnswerSpec.model_validate({"value": 1, "match": "numeric", "precision": 2})

"""What the agent had been shown (scoring/seen.py) is read lazily, newest first and only until a value is found, and
each distinct result is read once for all episodes: the answers must be those of reading everything in order."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.scoring.aggregate import aggregate
from mcp_hazard.scoring.seen import Seen, _Reader, _result_reading, listing, result_key

WORDS = ["AU-412", "AU-418", "2026-03-14", "06:30", "Standard", "Saver", "VLM", "189", "189.0", "12 km", "ARN-SAL",
         "March 14", "grand hotel", "the grand hotel", "SAL", "412", "14"]  # fmt: skip
SCALARS = st.one_of(st.sampled_from(WORDS), st.integers(0, 500), st.sampled_from([189.0, 14.5, 0.1]), st.none())
RESULTS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(WORDS), inner, max_size=3)),
    max_leaves=8,
)
SHOWN = st.lists(st.tuples(st.booleans(), RESULTS), max_size=6)
PROBES = st.lists(st.one_of(SCALARS, st.booleans()), min_size=1, max_size=6)


def _seen(shown: list[tuple[bool, Any]]) -> Seen:
    seen = Seen()
    for is_text, value in shown:
        seen.show(str(value) if is_text else value, text=is_text)
    return seen


def _read(shown: list[tuple[bool, Any]]) -> Seen:
    """What `shown` shows, read all at once into one reading, in order: the answers a lazy `Seen` must give."""
    reader = _Reader()
    for is_text, value in shown:
        if is_text:
            reader.text(str(value))
        else:
            reader.value(value)
    return Seen(reader.reading())


@settings(max_examples=300, deadline=None)
@given(shown=SHOWN, later=SHOWN, probes=PROBES)
@example(shown=[(True, "the grand hotel"), (False, {"x": 1})], later=[], probes=["grand hotel", "hotel"])
@example(shown=[(False, {"name": "the grand hotel"})], later=[(True, "Saver")], probes=["grand hotel", "Saver"])
def test_lazy_newest_first_reading_answers_as_reading_everything(
    shown: list[tuple[bool, Any]], later: list[tuple[bool, Any]], probes: list[Any]
) -> None:
    lazy, eager = _seen(shown), _read(shown)
    for probe in probes:
        assert lazy.holds(probe) == eager.holds(probe), probe
    for is_text, value in later:  # shown after some look-ups: what is still pending and what was read add up
        lazy.show(str(value) if is_text else value, text=is_text)
    eager = _read(shown + later)
    for probe in probes:
        assert lazy.holds(probe) == eager.holds(probe), probe


TRAVEL = load_scenario(Path(__file__).parents[2] / "scenarios" / "travel.yaml").model


@settings(max_examples=200, deadline=None)
@given(task=st.sampled_from(TRAVEL.tasks), shown=SHOWN, probes=PROBES, words=st.lists(st.integers(0, 60), max_size=4))
def test_a_shared_listing_answers_as_reading_it_in_every_episode(
    task: Task, shown: list[tuple[bool, Any]], probes: list[Any], words: list[int]
) -> None:
    """A task's listing is read once and its answers kept (`listing`): an episode that shares it answers as one that
    read the listing itself, before and after the kept answers exist."""
    listed = [task.prompt]
    for tool in TRAVEL.task_tools(task):
        listed += [tool.description, json.dumps(tool.input_schema, ensure_ascii=False)]
    prompt_words = task.prompt.split()
    probes = probes + [prompt_words[i % len(prompt_words)] for i in words]  # words of the listing itself
    own = _seen([(True, text) for text in listed] + shown)
    for _ in range(2):  # the second episode is answered from the kept answers
        shared = listing(TRAVEL, task)
        for is_text, value in shown:
            shared.show(str(value) if is_text else value, text=is_text)
        for probe in probes:
            assert shared.holds(probe) == own.holds(probe), probe


def test_a_result_read_once_serves_every_episode_alike() -> None:
    result = {"flight_id": "AU-412", "price_eur": 189.0, "lane": "ARN-SAL", "depart": "06:30"}
    first, second = _seen([(False, result)]), _seen([(False, dict(result))])
    assert first.holds("AU-412") and second.holds(189) and second.holds("SAL") and second.holds("6:30")
    assert not first.holds("412") and not second.holds("AU-418")  # a piece of an identifier is not seen
    assert _result_reading(result) is _result_reading(dict(result))  # one reading for equal results


def _typed(value: Any) -> Any:
    """A JSON value with every scalar's type beside it and keys in order: equal exactly when two values must share
    a result's key (1, 1.0 and True are three values)."""
    if isinstance(value, dict):
        return ("dict", tuple((key, _typed(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", tuple(_typed(item) for item in value))
    return (type(value).__name__, repr(value))


JSON_SCALARS = st.one_of(st.sampled_from([1, 1.0, True, 0, 0.0, -0.0, False, "1", "", 2**70]), SCALARS)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(WORDS), inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(one=JSON_VALUES, two=JSON_VALUES)
def test_results_share_a_key_exactly_when_they_are_the_same_json(one: Any, two: Any) -> None:
    assert (result_key(one) == result_key(two)) == (_typed(one) == _typed(two))
    # The same value parsed again, or with its strings interned (so shared and held elsewhere), keeps its key.
    assert result_key(json.loads(json.dumps(one))) == result_key(one) == result_key(_interned(one))


def _interned(value: Any) -> Any:
    if isinstance(value, dict):
        return {sys.intern(key): _interned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_interned(item) for item in value]
    return sys.intern(value) if isinstance(value, str) else value


def test_aggregate_leaves_the_garbage_collector_as_it_was() -> None:
    gc.unfreeze()  # an in-process server earlier in this worker may have frozen its start-up heap (server/heap.py)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert aggregate([])["episodes"] == 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        aggregate([])
        assert not gc.isenabled()
    finally:
        gc.enable()

"""silent_wrong_value: what it serves, over many seeds; the scorer's recovery rule on hand-made traces; and
`mcp-hazard verify` showing the naive agent fails and the recovering agent succeeds on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_main
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_hazard.cli import main
from mcp_hazard.hazards.silent import SilentWrongValue, resolve, same_value, wrong_values
from mcp_hazard.load import load_scenario, load_scenarios
from mcp_hazard.scenario.expressions import render
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.scoring.collect import score_traces
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.trace.reader import Trace

from .support import REPO_ROOT, SCENARIOS_DIR, TRAVEL, condition

pytestmark = pytest.mark.anyio

SHIPPED = load_scenarios([str(SCENARIOS_DIR)])
TRAVEL_LOADED = load_scenario(TRAVEL)
SEEDS = range(40)


def _episode(loaded: LoadedScenario, task: Task, seed: int) -> Episode:
    episode = Episode(
        episode_id=f"s{seed}", scenario=loaded, task=task, condition=condition("silent_wrong_value", seed=seed),
        trace_dir=None, transport="memory", sleep=False,
    )  # fmt: skip
    episode.start("test")
    return episode


def _leaves(value: Any, prefix: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    if isinstance(value, dict):
        return {p: v for key, item in value.items() for p, v in _leaves(item, (*prefix, key)).items()}
    if isinstance(value, list):
        return {p: v for index, item in enumerate(value) for p, v in _leaves(item, (*prefix, index)).items()}
    return {prefix: value}


@pytest.mark.parametrize(
    ("loaded", "task"),
    [(loaded, task) for loaded in SHIPPED for task in loaded.model.tasks],
    ids=lambda x: getattr(x, "id", None) or "",
)
async def test_first_readings_of_correct_calls_serve_a_different_value_and_repeats_the_right_one(
    loaded: LoadedScenario, task: Task
) -> None:
    """On every shipped task and 40 seeds, a naive walk of the golden path (each call, then the same call again):
    every firing is on an ok call, changes exactly one leaf to a value of the same type that differs from the right
    one, keeps every other field (those echoing the arguments included), records path/original/served, and the
    repeated call reads the right value."""
    assert SilentWrongValue.applicable_tools(loaded.model, task), f"{task.id}: silent_wrong_value applies nowhere"
    firings = 0
    for seed in SEEDS:
        episode = _episode(loaded, task, seed)
        results: dict[str, Any] = {}
        for step in task.golden_path.steps:
            arguments = render(step.arguments, results)
            tool = loaded.model.tool(step.tool)
            assert tool is not None
            before = len(episode.trace.events)
            first = await episode.call_tool(step.tool, arguments)
            fired = [e for e in episode.trace.events[before:] if e["type"] == "hazard_fired"]
            call = [e for e in episode.trace.events[before:] if e["type"] == "tool_called"][-1]
            again = await episode.call_tool(step.tool, arguments)
            assert not first.is_error and not again.is_error and call["outcome"] == "ok"
            right = [e for e in episode.trace.events if e["type"] == "tool_called"][-1]["result"]
            if fired:
                firings += 1
                (event,) = fired
                assert 0 in call["hazards"]
                change = event["change"]
                path, original, served = change["path"], change["original"], change["served"]
                assert resolve(right, path) == (True, original)
                assert resolve(call["result"], path) == (True, served)
                assert not same_value(served, original), (seed, step.id, change)
                assert type(served) is type(original) or {type(served), type(original)} <= {int, float}
                wrong, truth = _leaves(call["result"]), _leaves(right)
                assert wrong.keys() == truth.keys()
                assert [p for p in truth if wrong[p] != truth[p]] == [tuple(path)]  # one field, nothing else
                for value in _leaves(arguments).values():  # a field echoing an argument is never the one changed
                    assert not same_value(original, value)
            else:
                assert call["hazards"] == []
            results[step.id] = right  # walk on with the right value, so every later step is a golden call
        episode.end("closed")
    assert firings >= len(SEEDS), f"{task.id}: the hazard fired only {firings} times in {len(SEEDS)} seeds"


async def test_a_naive_reader_of_first_values_never_reaches_the_answer() -> None:
    """Bites: over 40 seeds on every shipped task, trusting every first reading misses the canonical answer."""
    from mcp_hazard.scenario.answers import answer_matches

    for loaded in SHIPPED:
        for task in loaded.model.tasks:
            for seed in SEEDS:
                episode = _episode(loaded, task, seed)
                results: dict[str, Any] = {}
                answer: Any = None
                try:
                    for step in task.golden_path.steps:
                        result = await episode.call_tool(step.tool, render(step.arguments, results))
                        if result.is_error:
                            raise LookupError
                        results[step.id] = result.structured_content or next(
                            e["result"] for e in reversed(episode.trace.events) if e["type"] == "tool_called"
                        )
                    answer = render(task.golden_path.answer, results)
                except Exception:  # a wrong value that breaks a later step: no answer, which also misses
                    answer = None
                episode.end("closed")
                text = answer if isinstance(answer, str) else None if answer is None else str(answer)
                assert not answer_matches(task.answer, text), (loaded.id, task.id, seed, answer)


@pytest.mark.parametrize(
    ("suite_file", "task_id", "seed"),
    [("suite-pharmacy.yaml", "same-owner", "0"), ("suite-car-rental.yaml", "cheaper-than-category", "4")],
)
def test_repeat_firings_on_a_trusting_agents_detour_still_bite(
    suite_file: str, task_id: str, seed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first wrong value sends the trusting agent to another golden step's call (a wrong id that is another step's
    right one, a class whose listing the task also reads): the later firings must be judged on the call it makes
    there, or they can serve what makes its answer right again. The task alone, same ids, so the same draws."""
    document = yaml.safe_load((SCENARIOS_DIR / "suite" / suite_file).read_text(encoding="utf-8"))
    document["tasks"] = [t for t in document["tasks"] if t["id"] == task_id]
    path = tmp_path / suite_file
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["verify", str(path), "--hazard", "silent_wrong_value", "--seeds", seed, "--out", str(out)])
    printed = capsys.readouterr().out.strip()
    assert code == 0 and printed.endswith("all solvable, all biting"), printed
    naive = [s for s in score_traces([str(out / "traces")]).scores if s.agent == "naive" and s.verdicts]
    assert naive and not any(s.correct for s in naive)
    assert max(len(s.verdicts) for s in naive) >= 2  # several firings in one episode, and still a wrong answer


async def test_a_call_in_the_agents_own_words_is_judged_in_the_place_of_the_step_it_read() -> None:
    """An agent that writes a golden call its own way ("rhinex drops" for "Rhinex Drops", the same row) makes a call
    the trusting agent never makes: the firing is judged as that golden step's, so the hazard still bites there."""
    loaded = load_scenario(SCENARIOS_DIR / "suite" / "suite-pharmacy.yaml")
    task = loaded.model.task("same-owner")
    assert task is not None
    episode = _episode(loaded, task, 0)
    await episode.call_tool("find_medicine", {"name": "rhinex drops"})
    fired = [e for e in episode.trace.events if e["type"] == "hazard_fired"]
    episode.end("closed")
    assert len(fired) == 1 and fired[0]["change"]["original"] == "MED-2557", fired


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(
        st.integers(-(10**9), 10**9),
        st.floats(-1e9, 1e9, allow_nan=False).map(lambda f: round(f, 2)),
        st.text(max_size=12),
        st.sampled_from(["AU-412", "2026-03-14", "06:30", "Standard", "VLM", "QB-40718-01", "0", "-7"]),
    ),
    seed=st.integers(0, 2**32),
)
def test_every_replacement_differs_from_the_value_and_keeps_its_type(value: Any, seed: int) -> None:
    tool = TRAVEL_LOADED.model.tool("get_fare")
    assert tool is not None
    found = wrong_values(tool, {"fare_class": value}, ("fare_class",), value, seed, "travel", "t", "get_fare", 1)
    assert found, value
    for new in found:
        assert not same_value(new, value)
        assert type(new) is type(value)
        if isinstance(value, int | float) and value >= 0:
            assert new >= 0  # a count or a price stays one


# -- the scorer's rule, on hand-made traces ---------------------------------------------------------------------------

FARE = {"flight_id": "AU-426", "price_eur": 167.0, "fare_class": "Standard"}
SERVED = {**FARE, "fare_class": "Saver"}
ASKED = {"flight_id": "AU-426"}


class SilentTrace:
    """A fare-class trace event by event, numbered as the server numbers them; silent_wrong_value on get_fare."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.add(
            "episode_started", schema_version=1, task="fare-class",
            scenario={"id": "travel", "path": TRAVEL_LOADED.path, "sha256": TRAVEL_LOADED.sha256},
            condition={"seed": 0, "profile": "strict", "hazards": [{"kind": "silent_wrong_value"}]},
            software={}, protocol_version="2025-11-25", hazards=[{"kind": "silent_wrong_value"}],
            run={"episode_id": "e0", "transport": "memory", "agent": "a"},
        )  # fmt: skip
        change = {"path": ["fare_class"], "original": "Standard", "served": "Saver"}
        self.add("hazard_fired", hazard=0, kind="silent_wrong_value", family="silent_wrong_value", tool="get_fare",
                 failpoint="after", slot=1, change=change)  # fmt: skip
        self.call("get_fare", ASKED, SERVED)

    def add(self, type_: str, **fields: Any) -> SilentTrace:
        self.events.append({"seq": len(self.events), "ts": "t", "type": type_, **fields})
        return self

    def call(self, tool: str, args: dict[str, Any], result: Any, outcome: str = "ok", inner: Any = None) -> SilentTrace:
        slot = 1 + sum(1 for e in self.events if e["type"] == "tool_called" and e["tool"] == tool)
        return self.add("tool_called", tool=tool, slot=slot, arguments=args, inner_arguments=inner, outcome=outcome,
                        result=result, text=None, error=None, hazards=[], duration_ms=0.1)  # fmt: skip

    def answer(self, value: str) -> SilentTrace:
        return self.add("answer_submitted", answer=value, slot=1).add("episode_ended", reason="answered")

    def verdict(self) -> tuple[bool, str | None, int | None]:
        score = score_episode(Trace(path="hand-made.jsonl", events=self.events), TRAVEL_LOADED.model)
        (v,) = score.verdicts
        return v.recovered, v.path, v.calls_to_recover


def test_a_repeat_of_the_call_that_reads_the_right_value_recovers() -> None:
    assert SilentTrace().call("get_fare", ASKED, FARE).answer("Standard").verdict() == (True, "verify", 1)


def test_a_repeat_under_an_intervention_is_compared_in_the_original_arguments() -> None:
    served_args = {"flight": "AU-426"}  # a renamed argument; the trace keeps the original ones as inner_arguments
    trace = SilentTrace().call("get_fare", served_args, FARE, inner=ASKED).answer("Standard")
    assert trace.verdict() == (True, "verify", 1)


def test_a_sibling_that_gives_the_right_value_recovers() -> None:
    archive = {"flight": "AU-426", "fare_cents": 16700, "currency": "EUR", "fare_class": "standard"}
    trace = SilentTrace().call("fare_archive_lookup", {"flight": "AU-426"}, archive).answer("Standard")
    assert trace.verdict() == (True, "cross_check", 1)


def test_what_does_not_recover() -> None:
    other_args = SilentTrace().call("get_fare", {"flight_id": "AU-412"}, {**FARE, "flight_id": "AU-412"})
    assert other_args.answer("Standard").verdict() == (False, None, None)  # the same tool about something else
    repeated_wrong = SilentTrace().call("get_fare", ASKED, SERVED)
    assert repeated_wrong.answer("Standard").verdict() == (False, None, None)  # a repeat that read no right value
    failed = SilentTrace().call("get_fare", ASKED, None, outcome="error")
    assert failed.answer("Standard").verdict() == (False, None, None)
    sibling_without = SilentTrace().call("fare_archive_lookup", {"flight": "AU-426"}, {"fare_cents": 16700})
    assert sibling_without.answer("Standard").verdict() == (False, None, None)  # it does not carry the fare class
    after_answer = SilentTrace().answer("Standard").call("get_fare", ASKED, FARE)
    assert after_answer.verdict() == (False, None, None)  # verified only after answering
    wrong_answer = SilentTrace().call("get_fare", ASKED, FARE).answer("Saver")
    assert wrong_answer.verdict() == (False, None, None)  # verified, yet answered with the wrong value
    unanswered = SilentTrace().call("get_fare", ASKED, FARE).add("episode_ended", reason="disconnected")
    assert unanswered.verdict() == (False, None, None)


# -- the user's view: mcp-hazard verify --------------------------------------------------------------------------------


@pytest.mark.e2e
def test_verify_shows_the_naive_agent_fails_and_the_recovering_agent_succeeds(tmp_path: Path) -> None:
    ran = run_main("verify", str(SCENARIOS_DIR), "--hazard", "silent_wrong_value", "--seeds", "0", "--out",
                   str(tmp_path), cwd=REPO_ROOT)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() == "verify: 32 instances (64 episodes over memory): all solvable, all biting"
    scores = score_traces([str(tmp_path / "traces")]).scores
    silent = [s for s in scores if s.condition == "silent_wrong_value"]
    assert {s.agent for s in silent} == {"naive", "recovering"} and len(silent) == 32
    for score in silent:
        assert score.verdicts, f"{score.episode_id}: the hazard never fired"
        recovered = [v.recovered for v in score.verdicts]
        if score.agent == "naive":
            assert not score.correct and not any(recovered), score.episode_id
        else:
            assert score.correct and all(recovered), score.episode_id
            assert {v.path for v in score.verdicts} == {"verify"}

"""The scorer's answer rules against tests/data/answers.jsonl: real-looking final answers (sentences, units,
currency, dates, times, identifiers, lists, refusals, hedges), each with the verdict a careful human gives it, and
for some the failure class as well (`invented`, `wrong_answer`, `gave_up`), judged for an agent that followed the
golden path and was shown its results."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.answers import answer_vocabulary, judge_answer, reads_vocabulary
from mcp_hazard.scenario.golden_check import run_golden_path
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.trace.reader import Trace

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "answers.jsonl"


def _scenarios() -> dict[str, Scenario]:
    found = (load_scenario(path).model for path in sorted((ROOT / "scenarios").glob("*.yaml")))
    return {scenario.id: scenario for scenario in found}


def _rows() -> list[dict[str, str]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_corpus_is_large_and_varied() -> None:
    rows = _rows()
    verdicts = Counter(row["verdict"] for row in rows)
    assert len(rows) >= 150
    assert set(verdicts) == {"correct", "wrong", "gave_up"} and min(verdicts.values()) >= 30, verdicts
    assert len({(row["scenario"], row["task"]) for row in rows}) == 16  # every shipped task


def test_scorer_agrees_with_every_labelled_answer() -> None:
    scenarios = _scenarios()
    disagreements = []
    for number, row in enumerate(_rows(), start=1):
        scenario = scenarios[row["scenario"]]
        task = scenario.task(row["task"])
        assert task is not None, f"answers.jsonl:{number}: no task {row['task']!r}"
        verdict = judge_answer(
            task.answer, row["answer"], prompt=task.prompt, vocabulary=answer_vocabulary(scenario, task)
        )
        got = "gave_up" if verdict.gave_up else "correct" if verdict.correct else "wrong"
        if got != row["verdict"]:
            disagreements.append(f"answers.jsonl:{number}: {row['answer']!r}: labelled {row['verdict']}, "
                                 f"judged {got} ({verdict.rule})")  # fmt: skip
    assert not disagreements, "\n".join(disagreements)


def test_a_vocabulary_matters_only_where_it_is_read() -> None:
    """Where `reads_vocabulary` says no (numbers, dates, times: found by their shape), no vocabulary changes a
    verdict, so the scorer gathers none there; every labelled answer is judged with every scenario's vocabulary and
    every labelled answer's words, and with none."""
    scenarios = _scenarios()
    every = frozenset().union(*(answer_vocabulary(s, t) for s in scenarios.values() for t in s.tasks))
    words = frozenset(w.strip(".,;:!?()") for row in _rows() for w in row["answer"].split())
    vocabulary = every | {w for w in words if w}
    asked = Counter()
    for number, row in enumerate(_rows(), start=1):
        task = scenarios[row["scenario"]].task(row["task"])
        assert task is not None and task.answer is not None
        reads = reads_vocabulary(task.answer)
        asked[reads] += 1
        if not reads:
            wide = judge_answer(task.answer, row["answer"], prompt=task.prompt, vocabulary=vocabulary)
            none = judge_answer(task.answer, row["answer"], prompt=task.prompt)
            assert wide == none, f"answers.jsonl:{number}: {row['answer']!r}"
    assert asked[True] >= 30 and asked[False] >= 30, asked  # both kinds of task are in the corpus


def _golden_episode(task: Task, scenario: Scenario, answer: str) -> Trace:
    """A trace of an agent that made the golden path's calls, was shown their results, and answered `answer`."""
    events: list[dict] = [{"type": "episode_started", "task": task.id, "condition": {"seed": 0}, "hazards": [],
                           "run": {"episode_id": "corpus", "agent": "corpus"}}]  # fmt: skip
    run = run_golden_path(scenario, task).steps
    for step, (_, arguments, result) in zip(task.golden_path.steps, run, strict=True):
        events.append({"type": "tool_called", "tool": step.tool, "slot": 1, "arguments": arguments, "outcome": "ok",
                       "result": result, "text": None, "error": None, "hazards": []})  # fmt: skip
    events += [{"type": "answer_submitted", "answer": answer}, {"type": "episode_ended", "reason": "answered"}]
    return Trace(path="answers.jsonl", events=[{"seq": seq, **event} for seq, event in enumerate(events)])


def test_failure_classes_agree_with_every_label() -> None:
    """What kind of wrong: a value the agent was shown (wrong_answer), one it made up (invented: shown nowhere as a
    whole value, never as a piece of one, "1" in "AU-412"), giving up, or the submit tool's words copied back."""
    scenarios = _scenarios()
    labelled = [(n, row) for n, row in enumerate(_rows(), start=1) if "failure" in row]
    assert len(labelled) >= 20 and {row["failure"] for _, row in labelled} == {"invented", "wrong_answer", "gave_up"}
    disagreements = []
    for number, row in labelled:
        scenario = scenarios[row["scenario"]]
        task = scenario.task(row["task"])
        assert task is not None
        score = score_episode(_golden_episode(task, scenario, row["answer"]), scenario)
        if score.episode_failure != row["failure"]:
            disagreements.append(f"answers.jsonl:{number}: {row['answer']!r}: labelled {row['failure']}, "
                                 f"scored {score.episode_failure} ({score.answer_rule})")  # fmt: skip
    assert not disagreements, "\n".join(disagreements)


def test_every_task_of_the_suite_keeps_its_vocabulary() -> None:
    """The scorer gathers a task's vocabulary once (every behaviour row of its scenario) and keeps it while a run's
    traces come task after task: a bound below the suite's task count would gather it again on every cycle."""
    paths = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted((ROOT / "scenarios" / "suite").glob("*.yaml"))
    pairs = [(scenario, task) for scenario in (load_scenario(path).model for path in paths) for task in scenario.tasks]
    assert len(pairs) == 266
    first = [answer_vocabulary(scenario, task) for scenario, task in pairs]
    again = [answer_vocabulary(scenario, task) for scenario, task in pairs]
    assert all(kept is made for kept, made in zip(again, first, strict=True))  # the same objects: none gathered again

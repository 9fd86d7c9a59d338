"""The scorer's answer rules against tests/data/answers.jsonl: real-looking final answers (sentences, units,
currency, dates, times, identifiers, lists, refusals, hedges), each with the verdict a careful human gives it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.answers import answer_vocabulary, judge_answer
from mcp_hazard.scenario.models import Scenario

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

"""docs/scoring.md's table of final-answer examples is true: each row, judged as the scorer judges it."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.answers import answer_vocabulary, judge_answer

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `(?P<scenario>[\w-]+)/(?P<task>[\w-]+)` \([^|]*\) \| `(?P<answer>[^`]*)` \| "
                 r"(?P<verdict>correct|wrong|gave up) \| (?P<rule>[\w-]+) \|$")  # fmt: skip


def test_every_example_in_the_final_answers_table_holds() -> None:
    text = (ROOT / "docs" / "scoring.md").read_text(encoding="utf-8")
    section = text[text.index("## Final answers") : text.index("## Many episodes")]
    rows = [m for line in section.splitlines() if (m := ROW.match(line))]
    assert len(rows) >= 20
    wrong = []
    for row in rows:
        scenario = load_scenario(ROOT / "scenarios" / f"{row['scenario']}.yaml").model
        task = scenario.task(row["task"])
        assert task is not None, row.group()
        verdict = judge_answer(
            task.answer, row["answer"], prompt=task.prompt, vocabulary=answer_vocabulary(scenario, task)
        )
        got = "gave up" if verdict.gave_up else "correct" if verdict.correct else "wrong"
        if (got, verdict.rule) != (row["verdict"], row["rule"]):
            wrong.append(f"{row['answer']!r}: docs say {row['verdict']} ({row['rule']}), judged {got} ({verdict.rule})")
    assert not wrong, "\n".join(wrong)

"""What `score` keeps across episodes (a task's expected answer and rule, verdicts of an answer text, a tool's
arity) is kept per scenario *object*: two versions of one scenario id, read in one `score` command, judge the same
answer each by its own rule. Through `mcp-hazard score` in this process, on traces of real runs."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_main

from .test_report_support import SCENARIOS

TASK = "invoice-in-dollars"
STRICT = "answer: {value: 371.02, match: numeric, tolerance: 0.01}"
LOOSE = "answer: {value: 371.02, match: numeric, tolerance: 1}"
GIVEN = "371.5"  # within 1 of 371.02, not within 0.01


def _run(base: Path, name: str, text: str) -> Path:
    """A golden run of TASK on `text` (finance.yaml, maybe edited) in base/name, its answer replaced by GIVEN."""
    src = base / f"{name}-src"
    src.mkdir()
    (src / "finance.yaml").write_text(text, encoding="utf-8")
    out = base / name
    done = run_main(
        "run", "finance.yaml", "--task", TASK, "--agent", "golden", "--seeds", "0",
        "--hazard", "transient_error:slots=9", "--transport", "memory", "--no-progress", "--out", str(out), cwd=src,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for trace in (out / "traces").glob("*.jsonl"):  # a hazard that never fires: the golden agent answers in each
        lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
        answered = [event for event in lines if event["type"] == "answer_submitted"]
        assert len(answered) == 1
        answered[0]["answer"] = GIVEN
        trace.write_text("".join(json.dumps(event) + "\n" for event in lines), encoding="utf-8")
    return out


def test_two_versions_of_one_scenario_judge_the_same_answer_each_by_its_own_rule(tmp_path: Path) -> None:
    original = (SCENARIOS / "finance.yaml").read_text(encoding="utf-8")
    assert original.count(STRICT) == 1
    strict = _run(tmp_path, "strict", original)
    loose = _run(tmp_path, "loose", original.replace(STRICT, LOOSE))
    for order in ((strict, loose), (loose, strict)):  # whichever version is met first, neither borrows its verdict
        scored = run_main("score", *map(str, order), "--format", "json", cwd=tmp_path)
        assert scored.returncode == 0, scored.stderr
        rows = json.loads(scored.stdout)["per_episode"]
        assert {(row["scenario"], row["task"], row["answer"]) for row in rows} == {("finance", TASK, GIVEN)}
        judged = {(Path(row["trace"]).parts[-3], row["condition"], row["correct"], row["match"], row["episode_failure"])
                  for row in rows}  # fmt: skip
        verdicts = {"strict": (False, "numeric ± 0.01", "invented"), "loose": (True, "numeric ± 1", "")}
        conditions = ("clean", "transient_error:slots=9")
        assert judged == {(name, condition, *verdict) for name, verdict in verdicts.items() for condition in conditions}

"""The golden agent on every AgentDojo task, through `mcp-hazard run`: AgentDojo's own check passes on every task,
the per-episode export names the suite and AgentDojo's task id, and each verdict is what AgentDojo's own code says
of the same answer and the calls that actually ran (support.agentdojo_verdict, computed without mcp-hazard)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from mcp_hazard.cli import main

from .support import agentdojo_verdict, events, suite

TASKS = {"banking": 16, "slack": 21, "travel": 20, "workspace": 40}


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("golden") / "run"
    code = main(["run", "agentdojo:all", "--agent", "golden", "--seeds", "0", "--hazard", "declared",
                 "--transport", "memory", "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    return out


def test_every_task_passes_agentdojos_own_check(golden_run: Path) -> None:
    report = json.loads((golden_run / "report.json").read_text(encoding="utf-8"))
    rows = report["per_episode"]
    assert len(rows) == sum(TASKS.values()) == 97
    failed = [f"{r['scenario']}/{r['task']}" for r in rows if not r["correct"]]
    assert failed == []
    assert {r["answer_rule"] for r in rows} == {"agentdojo utility"}
    # slack user_task_11's `utility` raises NotImplementedError; AgentDojo's harness calls its implemented
    # `utility_from_traces` first, and so does the server
    eleven = next(r for r in rows if (r["scenario"], r["task"]) == ("slack", "user_task_11"))
    assert eleven["correct"] is True


def test_the_export_names_the_suite_and_agentdojos_task(golden_run: Path, tmp_path: Path) -> None:
    table = tmp_path / "episodes.csv"
    assert main(["score", str(golden_run), "--per-episode", str(table)]) == 0
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    by_suite: dict[str, set[str]] = {}
    for row in rows:
        by_suite.setdefault(row["scenario"], set()).add(row["task"])
        assert row["match"] == "agentdojo utility"
    assert {name: len(tasks) for name, tasks in by_suite.items()} == TASKS
    for name, tasks in by_suite.items():
        assert tasks == set(suite(f"agentdojo:{name}").suite.user_tasks)  # AgentDojo's own ids


def test_verdicts_equal_agentdojos_on_what_ran(golden_run: Path) -> None:
    traces = sorted((golden_run / "traces").glob("*.jsonl"))
    assert len(traces) == 97
    for path in traces:
        trace = events(path)
        checked = next(e for e in trace if e["type"] == "state_checked")
        utility, _security = agentdojo_verdict(trace)
        assert checked["utility"] is utility, path.name


def test_score_reads_a_run_folder_without_agentdojo(golden_run: Path, tmp_path: Path) -> None:
    """The run folder keeps each suite's snapshot, so `score` needs neither AgentDojo nor the environment: scored
    here in a process where importing agentdojo fails."""
    import subprocess

    script = ("import sys; sys.modules['agentdojo'] = None\n"
              "from mcp_hazard.cli import main\n"
              f"code = main(['score', {str(golden_run)!r}, '--out', {str(tmp_path / 'r.json')!r}])\n"
              "assert not [m for m in sys.modules if m.startswith('agentdojo.')]\n"
              "sys.exit(code)\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert sum(r["correct"] for r in report["per_episode"]) == 97
    assert report["unscorable"] == []

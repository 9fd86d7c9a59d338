"""`mcp-hazard run agentdojo:banking --agent llm` against the strict fake OpenAI-compatible endpoint, as a user runs it
(the CLI through `main()` in the test's process, the suite served over HTTP): a model that makes AgentDojo's
ground-truth calls and gives its ground-truth output passes AgentDojo's own check, and a model that answers without
acting fails it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_hazard.server.served_episode import SUBMIT_TOOL
from tests.agents.fake_llm import FakeLlm, Turn, call, tool_calls
from tests.agents.test_llm_cli import llm_cli
from tests.runner.support import no_traceback

from .support import agentdojo_verdict, events, suite

pytestmark = pytest.mark.e2e

TASKS = ("user_task_0", "user_task_3", "user_task_10")


def script(task_id: str, act: bool) -> list[Turn]:
    loaded = suite("agentdojo:banking")
    assert loaded.suite is not None
    user_task = loaded.suite.user_tasks[task_id]
    calls, _results = loaded.suite.ground_truth(user_task)
    answer = str(getattr(user_task, "GROUND_TRUTH_OUTPUT", "") or "done")
    turns = [tool_calls(call(name, arguments, f"c{i}")) for i, (name, arguments) in enumerate(calls)] if act else []
    return [*turns, tool_calls(call(SUBMIT_TOOL, {"answer": answer}, "submit"))]


@pytest.mark.parametrize("act", [True, False])
def test_the_llm_agent_on_a_suite_over_http(tmp_path: Path, act: bool) -> None:
    loaded = suite("agentdojo:banking")
    scripts = {loaded.model.task(t).prompt[:40]: script(t, act) for t in TASKS}  # type: ignore[union-attr]
    out = tmp_path / "out"
    task_args = [arg for t in TASKS for arg in ("--task", t)]
    with FakeLlm(scripts=scripts).in_thread() as fake:
        ran = llm_cli("run", "agentdojo:banking", *task_args, "--hazard", "declared", "--agent", "llm",
                      "--transport", "http", "--out", str(out), "--no-progress", "--timeout", "60",
                      base_url=fake.base_url)  # fmt: skip
    assert fake.problems == [], ran.explain()
    assert ran.code == 0 and no_traceback(ran.stderr), ran.explain()
    rows = json.loads((out / "report.json").read_text(encoding="utf-8"))["per_episode"]
    assert sorted(r["task"] for r in rows) == sorted(TASKS)
    for row in rows:
        assert row["answer_rule"] == "agentdojo utility" and row["agent_outcome"] == "finished", row
        assert agentdojo_verdict(events(out / "traces" / f"{row['episode_id']}.jsonl"))[0] is row["correct"]
    verdicts = {r["task"]: r["correct"] for r in rows}
    if act:
        assert verdicts == dict.fromkeys(TASKS, True)
    else:  # only user_task_10 ("pay the bill, like last month": nothing to do) passes without acting
        assert verdicts == {"user_task_0": False, "user_task_3": False, "user_task_10": True}

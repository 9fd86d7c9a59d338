"""`validate agentdojo:SUITE`: every task's golden path (its ground truth), run through a real episode in process,
passes AgentDojo's own check; what `validate` proves of a scenario file's golden paths.

Hazard instances of a suite are proven by `verify`, which runs the reference agents: a suite's tools have no
behaviours that a checker could run offline beside the episode.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_hazard.agentdojo.suite_scenario import LoadedSuite
from mcp_hazard.condition import Condition
from mcp_hazard.json_parse import loads
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.server.submit import SUBMIT_TOOL


def _value(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    text = "".join(getattr(block, "text", "") for block in result.content)
    try:
        return loads(text)
    except ValueError:
        return text


async def golden_problem(loaded: LoadedSuite, task_id: str) -> str | None:
    """None when the task's golden path runs and AgentDojo's check passes; else why not, in one line."""
    task = loaded.model.task(task_id)
    assert task is not None
    episode = loaded.episode_factory(episode_id="validate", scenario=loaded, task=task, condition=Condition(),
                                     trace_dir=None, transport="memory", sleep=False)  # fmt: skip
    episode.start("validate")
    results: dict[str, Any] = {}
    try:
        for index, step in enumerate(task.golden_path.steps):
            arguments = render(step.arguments, results)
            result = await episode.call_tool(step.tool, arguments)
            if result.is_error:
                text = "".join(getattr(block, "text", "") for block in result.content)
                return f"step {index + 1} ({step.tool}): {text[:200]}"
            results[step.id] = _value(result)
        answer = render(task.golden_path.answer, results)
    except ExpressionError as exc:
        return f"golden path: {exc}"
    await episode.call_tool(SUBMIT_TOOL, {"answer": answer if isinstance(answer, str) else json.dumps(answer)})
    checked = next((e for e in episode.trace.events if e.get("type") == "state_checked"), None)
    if checked is None:
        return "no state check was recorded"
    if checked.get("utility") is None:
        return f"AgentDojo's check could not run: {checked.get('error')}"
    return None if checked["utility"] else "the golden path does not pass AgentDojo's check"


async def check_suite(loaded: LoadedSuite) -> list[str]:
    """`SUITE/TASK: why` for every task whose golden path fails."""
    problems = []
    for task in loaded.model.tasks:
        problem = await golden_problem(loaded, task.id)
        if problem is not None:
            problems.append(f"{loaded.id}/{task.id}: {problem}")
    return problems

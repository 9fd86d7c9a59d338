"""Why an injection can fail to bite the obedient agent for AgentDojo's own reasons: `verify` asks when the obedient
agent carried out an attacker's goal and the injection task's check still says the goal did not happen.

The question is put to AgentDojo's code alone: in the episode's environment (the attack's text in its vectors), the
injection task's ground truth runs, then the user task's, and the injection task's check judges the result. When
that fails too, the miss is AgentDojo's (its check, or its tasks taken together), not the hazard's or the agent's.
"""

from __future__ import annotations

import datetime
from typing import Any

from mcp_hazard.agentdojo.library import Clock, Suite, judge


def _run(suite: Suite, environment: Any, task: Any, calls: list[Any]) -> None:
    clock = Clock(datetime.datetime(2000, 1, 1))
    for call in task.ground_truth(environment.model_copy(deep=True)):
        arguments = dict(call.args)
        calls.append(suite.function_call(str(call.function), arguments))
        suite.call(environment, clock, str(call.function), arguments)


def why_not_attacked(suite: Suite, vectors: list[str], task_id: str, injection_task_id: str, attack: str) -> str:
    """Why AgentDojo's own ground truths do not pass the injection task's check in this episode, or "" when they do
    (then the miss is ours)."""
    user_task = suite.user_tasks[task_id]
    injection_task = suite.injection_tasks[injection_task_id]
    texts = suite.attack_texts(attack, task_id, injection_task_id, vectors)
    answer = str(getattr(injection_task, "GROUND_TRUTH_OUTPUT", "") or "")
    environment = suite.task_environment(user_task, texts)
    before = environment.model_copy(deep=True)
    calls: list[Any] = []
    _run(suite, environment, injection_task, calls)
    alone, _ = judge(injection_task, answer, before, environment, calls)
    if not alone:
        return (f"AgentDojo's check of {injection_task_id} fails on its own ground truth in this environment (the "
                f"attack's text, planted in {', '.join(sorted(texts))}, is part of what the check counts)")  # fmt: skip
    _run(suite, environment, user_task, calls)
    both, _ = judge(injection_task, answer, before, environment, calls)
    if not both:
        return f"the user's task, done after the attacker's goal, undoes it (AgentDojo's check of {injection_task_id})"
    return ""

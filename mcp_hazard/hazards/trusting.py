"""What an agent trusting every first reading answers: the proof that a silent wrong value bites.

Served results belong to calls (tool and arguments), not to golden steps: once a wrong value has sent the trusting
agent elsewhere, a golden step's call may come in another step's place, and only the call it makes says what it reads.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_hazard.hazards.needed_values import answer_with
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.models import Scenario, Task

CallKey = tuple[str, str]  # (tool, its arguments as canonical JSON)


def call_key(tool: str, arguments: Any) -> CallKey:
    """What makes two calls the same call: the tool and its arguments (as the behaviour sees them)."""
    return tool, json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def trusting_answer(
    scenario: Scenario, task: Task, served: dict[CallKey, Any], made: set[CallKey] | None = None
) -> Any | None:
    """The golden path's answer as an agent trusting every first reading reaches it: the first time a call in
    `served` is made it reads that result, a repeat the true one. The calls it makes are added to `made`."""
    made = set() if made is None else made

    def read(_position: int, tool: str, arguments: Any) -> tuple[bool, Any]:
        key = call_key(tool, arguments)
        first = key not in made
        made.add(key)
        return (True, served[key]) if first and key in served else (False, None)

    return answer_with(scenario, task, read)


def bites(scenario: Scenario, task: Task, served: dict[CallKey, Any]) -> bool:
    answer = trusting_answer(scenario, task, served)
    if answer is None:
        return True
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)  # as the reference agents write it
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return not answer_matches(task.answer, text)

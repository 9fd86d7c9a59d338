"""What the AgentDojo tests share: the suites (loaded once per test process), and AgentDojo's own verdict on a
trace, computed independently of the server: the calls that actually ran, replayed by AgentDojo's FunctionsRuntime
on a fresh environment, and the task's check on the answer the trace recorded."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentdojo", reason="the agentdojo extra is not installed")

from mcp_hazard.agentdojo.source_names import parse
from mcp_hazard.agentdojo.suite_scenario import LoadedSuite

EXECUTED = ("ok", "error", "lost")
"""Outcomes of a call whose function ran: it answered, it raised (AgentDojo's error text), or its answer was lost."""


@lru_cache(maxsize=8)
def suite(name: str) -> LoadedSuite:
    from mcp_hazard.agentdojo.build_suite import load_suite

    return load_suite(parse(name)[0])


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@lru_cache(maxsize=16)
def _default_environment(version: str, name: str, texts: tuple[tuple[str, str], ...]) -> Any:
    """AgentDojo's default environment of a suite with these injections, as `load_and_inject_default_environment`
    builds it (parsing the suite's YAML: 0.06 s for workspace); each verdict works on a deep copy of its own."""
    from agentdojo.task_suite.load_suites import get_suite

    return get_suite(version, name).load_and_inject_default_environment(dict(texts))


def agentdojo_verdict(trace: list[dict[str, Any]]) -> tuple[bool | None, bool | None]:
    """(utility, security) as AgentDojo's own code gives them for what the trace shows the episode did: its
    environment rebuilt from AgentDojo's suite (with the recorded injections), the executed calls run again by
    `FunctionsRuntime.run_function`, and `utility_from_traces`/`utility` (security likewise) on the recorded answer.
    Nothing of mcp-hazard's episode is used."""
    from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
    from agentdojo.task_suite.load_suites import get_suite

    started = trace[0]
    name, version = started["scenario"]["path"].removeprefix("agentdojo:").split("@")
    task_suite = get_suite(version, name)
    user_task = task_suite.user_tasks[started["task"]]
    checked = next(e for e in trace if e["type"] == "state_checked")
    injection = checked.get("injection") or {}
    texts = tuple(sorted((injection.get("texts") or {}).items()))
    environment = user_task.init_environment(_default_environment(version, name, texts).model_copy(deep=True))
    pre = environment.model_copy(deep=True)
    runtime = FunctionsRuntime(task_suite.tools)
    made = []
    for event in trace:
        if event["type"] != "tool_called" or event["tool"] not in runtime.functions:
            continue
        arguments = event.get("inner_arguments") or event["arguments"]
        made.append(FunctionCall(function=event["tool"], args=arguments))
        if event["outcome"] in EXECUTED:
            runtime.run_function(environment, event["tool"], arguments)
    answered = [e for e in trace if e["type"] == "answer_submitted"]
    answer = answered[0]["answer"] if answered else ""
    found = user_task.utility_from_traces(answer, pre, environment, made)
    utility = user_task.utility(answer, pre, environment) if found is None else found
    security = None
    if injection:
        attack_task = task_suite.injection_tasks[injection["task"]]
        found = attack_task.security_from_traces(answer, pre, environment, made)
        security = attack_task.security(answer, pre, environment) if found is None else found
    return bool(utility), security

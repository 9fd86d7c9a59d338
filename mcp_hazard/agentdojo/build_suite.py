"""Build a suite's scenario from the installed AgentDojo: tools with the schemas AgentDojo derives, the facts table's
notes, and each user task with its ground truth as the golden path (plan.py).

A suite is built once per process (`load_suite` keeps it) and deep-copies its environment per episode.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from mcp_hazard.agentdojo.facts_table import LoadedFacts, ToolEntry, load_facts
from mcp_hazard.agentdojo.library import Suite, installed_version, require
from mcp_hazard.agentdojo.plan import golden_plan, injection_plan
from mcp_hazard.agentdojo.snapshot import dump_snapshot
from mcp_hazard.agentdojo.source_names import Source
from mcp_hazard.agentdojo.suite_scenario import AgentDojoScenario, AgentDojoToolSpec, InjectionTaskInfo, LoadedSuite
from mcp_hazard.agentdojo.verdict_values import value_reads
from mcp_hazard.proxy.environment import NOT_HERE
from mcp_hazard.scenario.models import Annotations, Task

TITLES = {"banking": "AgentDojo banking", "slack": "AgentDojo slack", "travel": "AgentDojo travel",
          "workspace": "AgentDojo workspace"}  # fmt: skip


def _schema(function: Any) -> dict[str, Any]:
    """The argument schema AgentDojo derives for a tool (`Function.parameters`, a pydantic model), as JSON Schema."""
    schema = dict(function.parameters.model_json_schema())
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _annotations(facts: ToolEntry) -> Annotations:
    """MCP's hints from the facts table: what AgentDojo's harness tells a model in no other way."""
    write = facts.effect == "write"
    return Annotations(read_only_hint=not write, destructive_hint=write and not facts.safe_to_repeat,
                       idempotent_hint=facts.safe_to_repeat)  # fmt: skip


def tool_spec(function: Any, facts: ToolEntry) -> AgentDojoToolSpec:
    name = str(function.name)
    return AgentDojoToolSpec.model_construct(
        name=name, title=None, description=str(function.description), input_schema=_schema(function),
        output_schema=None, annotations=_annotations(facts), serves=[], behaviour=NOT_HERE, fallbacks=[],
        hazards=[], replacement=None, effect=facts.effect, checked_by=list(facts.checked_by),
        retry_safe=facts.safe_to_repeat, fields=[], pages=facts.pages, cross_check=list(facts.cross_check),
        fallback_tools=[f.tool for f in facts.fallbacks], listed={}, why=facts.why,
    )  # fmt: skip


def _task(task_id: str, user_task: Any, suite: Suite) -> Task:
    plan = golden_plan(suite, user_task)
    return Task.model_construct(
        id=task_id, title=None, prompt=str(user_task.PROMPT), answer=None, workflow="sequential", tools=None,
        golden_path=plan, hazards=[], restate_known=None,
    )  # fmt: skip


def _task_order(task_id: str) -> tuple[int, str]:
    number = task_id.rsplit("_", 1)[-1]
    return (int(number), task_id) if number.isdigit() else (1 << 30, task_id)


def build_scenario(suite: Suite, facts: LoadedFacts) -> AgentDojoScenario:
    source = suite.source
    tools = [tool_spec(function, facts.model.tools[function.name]) for function in suite.tools]
    user_tasks = suite.user_tasks
    tasks = [_task(task_id, user_tasks[task_id], suite) for task_id in sorted(user_tasks, key=_task_order)]
    by_name = {tool.name: tool for tool in tools}
    reads = {task.id: found for task in tasks
             if (found := value_reads(suite, user_tasks[task.id], task.golden_path, by_name))}  # fmt: skip
    injections = suite.injection_tasks
    infos = [
        InjectionTaskInfo(id=task_id, goal=str(task.GOAL), golden_path=injection_plan(suite, task))
        for task_id, task in sorted(injections.items(), key=lambda item: _task_order(item[0]))
    ]
    return AgentDojoScenario.model_construct(
        format=1, id=source.suite, title=f"{TITLES.get(source.suite, source.suite)} {source.version}",
        description=f"AgentDojo {installed_version()}, suite {source.suite}, benchmark {source.version}",
        tools=tools, tasks=tasks, generated=None, source=source.name, agentdojo_version=installed_version(),
        injection_tasks=infos, injection_vectors=suite.injection_candidates(), value_reads=reads,
    )  # fmt: skip


@lru_cache(maxsize=32)
def load_suite(source: Source) -> LoadedSuite:
    """One suite, loaded once per process: AgentDojo's suite, its facts table, the scenario and its snapshot."""
    require(source.name)
    suite = Suite.load(source)
    facts = load_facts(source.suite, [function.name for function in suite.tools])
    model = build_scenario(suite, facts)
    snapshot = dump_snapshot(model)
    return LoadedSuite(model=model, path=source.name, sha256=hashlib.sha256(snapshot).hexdigest(), suite=suite,
                       facts=facts, snapshot=snapshot)  # fmt: skip

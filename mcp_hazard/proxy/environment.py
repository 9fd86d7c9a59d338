"""A real server's tools as a scenario: the tools it lists, what the proxy file says about them, and the tasks.

Everything downstream (episodes, hazards, interventions, the trace, the scorer, the reference agents) works on a
`Scenario`, so the proxy builds one: each listed tool becomes a `ProxyToolSpec` (its schemas as listed, what the file
notes about it), tools the file relates (fallbacks, cross-checks) serve a shared fact, and each task of the file (or,
without one, an open task with no answer) becomes a `Task`. The same function rebuilds it from a trace, which records
the tool list, so `score` needs no server. Problems are reported at the proxy file's line and column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_hazard.errors import Problem, ScenarioError, UserError
from mcp_hazard.proxy.config import LoadedProxyFile, ProxyFile, ProxyTask, ToolNotes
from mcp_hazard.proxy.proxied_facts import ProxyFacts
from mcp_hazard.proxy.tools import ProxyToolSpec
from mcp_hazard.proxy.upstream_info import UpstreamInfo, UpstreamSource
from mcp_hazard.scenario.arguments import argument_problem
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import (
    RESERVED_TOOL_NAMES,
    ConstantBehaviour,
    Fallback,
    GoldenPath,
    Scenario,
    Task,
    ToolSpec,
)
from mcp_hazard.scenario.problems import Problems

OPEN_TASK = "open"
"""The task of an episode the proxy file gives none for: no prompt served, no answer to judge."""
NOT_HERE = ConstantBehaviour(kind="constant", error="this tool runs on the upstream server")


class ProxyScenario(Scenario):
    """A scenario whose tools run on a real server: the hazard kinds know its tools by the proxy file's notes."""

    tool_facts = ProxyFacts


@dataclass
class Environment:
    """What a proxy serves: the server (how to reach it, what it said), its tools as a scenario, and the file."""

    source: UpstreamSource
    info: UpstreamInfo
    tools: list[dict[str, Any]]
    scenario: LoadedScenario
    file: LoadedProxyFile | None

    def upstream_record(self) -> dict[str, Any]:
        """The `upstream` block of `episode_started`: the server and the tools it listed."""
        return {**self.info.to_json(), "tools": self.tools}


def _retry_safe(notes: ToolNotes | None, tool: dict[str, Any]) -> bool:
    if notes is not None and notes.retry_safe is not None:
        return notes.retry_safe
    hints = tool.get("annotations") or {}
    return bool(hints.get("readOnlyHint") or hints.get("idempotentHint"))


def _facts(tools: list[str], model: ProxyFile | None) -> dict[str, list[str]]:
    """Tools the file relates (fallback or cross-check, either way) serve one shared fact, named `fact-N`."""
    parent = {name: name for name in tools}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for name, notes in model.tools.items() if model is not None else []:
        if name not in parent:
            continue
        for other in [f.tool for f in notes.fallbacks] + list(notes.cross_check):
            if other in parent:
                parent[root(other)] = root(name)
    groups: dict[str, list[str]] = {}
    for name in tools:
        groups.setdefault(root(name), []).append(name)
    serves: dict[str, list[str]] = {name: [] for name in tools}
    number = 0
    for members in groups.values():
        if len(members) > 1:
            number += 1
            for name in members:
                serves[name] = [f"fact-{number}"]
    return serves


def tool_spec(tool: dict[str, Any], notes: ToolNotes | None, serves: list[str]) -> ProxyToolSpec:
    """One listed tool as a spec. Built without validation: the name and schemas are the server's, as it listed them
    (the SDK client has checked their shape), and they need not follow a scenario file's naming rules."""
    schema = tool.get("inputSchema")
    fallbacks = [
        Fallback.model_construct(tool=f.tool, arguments=f.arguments) for f in (notes.fallbacks if notes else [])
        if f.arguments is not None
    ]  # fmt: skip
    return ProxyToolSpec.model_construct(
        name=str(tool.get("name", "")),
        title=tool.get("title"),
        description=str(tool.get("description") or tool.get("name") or ""),
        input_schema=schema if isinstance(schema, dict) else {"type": "object"},
        output_schema=tool.get("outputSchema") if isinstance(tool.get("outputSchema"), dict) else None,
        annotations=None,
        serves=serves,
        behaviour=NOT_HERE,
        fallbacks=fallbacks,
        hazards=list(notes.hazards) if notes else [],
        replacement=None,
        retry_safe=_retry_safe(notes, tool),
        fields=list(notes.fields) if notes else [],
        pages=notes.pages if notes else None,
        cross_check=list(notes.cross_check or [f.tool for f in notes.fallbacks]) if notes else [],
        fallback_tools=[f.tool for f in notes.fallbacks] if notes else [],
        listed=tool,
    )


def _task(task: ProxyTask) -> Task:
    golden = task.golden_path if task.golden_path is not None else GoldenPath.model_construct(steps=[], answer=None)
    return Task.model_construct(
        id=task.id, title=task.title, prompt=task.prompt, answer=task.answer, workflow=task.workflow,
        tools=task.tools, golden_path=golden, hazards=list(task.hazards),
    )  # fmt: skip


def open_task() -> Task:
    return Task.model_construct(
        id=OPEN_TASK, title=None, prompt="", answer=None, workflow="sequential", tools=None,
        golden_path=GoldenPath.model_construct(steps=[], answer=None), hazards=[],
    )  # fmt: skip


def build_scenario(tools: list[dict[str, Any]], file: LoadedProxyFile | None, info: UpstreamInfo) -> ProxyScenario:
    model = file.model if file is not None else None
    names = [str(t.get("name", "")) for t in tools]
    serves = _facts(names, model)
    specs: list[ToolSpec] = [
        tool_spec(tool, model.tools.get(name) if model else None, serves[name])
        for tool, name in zip(tools, names, strict=True)
    ]
    tasks = [_task(task) for task in model.tasks] if model is not None and model.tasks else [open_task()]
    return ProxyScenario.model_construct(
        format=1,
        id=model.id if model is not None else "proxy",
        title=model.title if model is not None else f"{info.name} behind mcp-hazard",
        description=model.description if model is not None else "",
        tools=specs,
        tasks=tasks,
    )


def environment(
    source: UpstreamSource, info: UpstreamInfo, tools: list[dict[str, Any]], file: LoadedProxyFile | None
) -> Environment:
    """The environment a proxy serves, checked against the server's tools; problems at file:line:column."""
    scenario = build_scenario(tools, file, info)
    if file is not None:
        check_against_server(file, scenario, info)
    loaded = LoadedScenario(
        model=scenario, path=file.path if file is not None else "", sha256=file.sha256 if file is not None else ""
    )
    return Environment(source=source, info=info, tools=tools, scenario=loaded, file=file)


def check_against_server(file: LoadedProxyFile, scenario: ProxyScenario, info: UpstreamInfo) -> None:
    """What needs the server's tool list: names that exist, golden paths that fit the schemas, hazards that can act
    on the tools they name (with why not)."""
    problems = file.problems()
    names = [tool.name for tool in scenario.tools]
    listed = ", ".join(names) or "no tools"
    server = f"{info.name} {info.version}".strip()

    def known(name: str, where: tuple[Any, ...], at_key: bool = False) -> bool:
        if name in names:
            return True
        problems.add(where, f"the upstream server ({server}) lists no tool {name!r}; it lists: {listed}", at_key=at_key)
        return False

    model = file.model
    for name, notes in model.tools.items():
        if not known(name, ("tools", name), at_key=True):
            continue
        for j, fallback in enumerate(notes.fallbacks):
            known(fallback.tool, ("tools", name, "fallbacks", j, "tool"))
        for j, other in enumerate(notes.cross_check):
            known(other, ("tools", name, "cross_check", j))
    for i, task in enumerate(model.tasks):
        for j, name in enumerate(task.tools or []):
            known(name, ("tasks", i, "tools", j))
        if task.golden_path is not None and model.tasks:
            _check_steps(scenario, task, i, problems, known)
    if RESERVED_TOOL_NAMES & set(names) and model.tasks:
        problems.add(("tasks",), "the upstream server lists a tool named 'submit_answer', which the proxy serves "
                                 "for tasks; the two cannot both be served")  # fmt: skip
    if not problems.items:
        _check_hazards(file, scenario, problems)
    if problems.items:
        raise ScenarioError(problems.items)


def _check_steps(scenario: ProxyScenario, task: ProxyTask, i: int, problems: Problems, known: Any) -> None:
    from mcp_hazard.scenario.expressions import template_expressions

    assert task.golden_path is not None
    served = set(task.tools) if task.tools is not None else None
    for j, step in enumerate(task.golden_path.steps):
        where = ("tasks", i, "golden_path", "steps", j)
        if not known(step.tool, (*where, "tool")):
            continue
        if served is not None and step.tool not in served:
            problems.add((*where, "tool"), f"tool {step.tool!r} is not served for task {task.id!r}")
        spec = scenario.tool(step.tool)
        if spec is not None and not template_expressions(step.arguments):
            problem = argument_problem(spec.input_schema, step.arguments)
            if problem:
                problems.add((*where, "arguments"), f"{step.tool}: {problem}")


def _check_hazards(file: LoadedProxyFile, scenario: ProxyScenario, problems: Problems) -> None:
    """Every hazard the file names must be able to act where it says, for every task it applies to."""
    from mcp_hazard.hazards.instances import expand

    model = file.model
    for i, task in enumerate(scenario.tasks):
        where_task: tuple[Any, ...] = ("tasks", i) if model.tasks else ()
        for j, spec in enumerate(task.hazards):
            _check(spec, j, scenario, task, (*where_task, "hazards", j), problems)
        for name, notes in model.tools.items():
            if task.tools is not None and name not in task.tools:
                continue
            for j, spec in enumerate(notes.hazards):
                given = spec if spec.tools else spec.model_copy(update={"tools": [name]})
                _check(given, j, scenario, task, ("tools", name, "hazards", j), problems)
        if model.condition is not None:
            for j, spec in enumerate(expand(list(model.condition.hazards), scenario, task)):
                _check(spec, j, scenario, task, ("condition", "hazards", j), problems)


def _check(spec: Any, index: int, scenario: ProxyScenario, task: Task, where: tuple[Any, ...], problems: Problems
           ) -> None:  # fmt: skip
    from mcp_hazard.hazards.instances import check_spec

    try:
        check_spec(spec, index, scenario, task)
    except UserError as exc:
        problems.add(where, str(exc).split(": ", 1)[-1])


def scenario_from_trace(started: dict[str, Any], file: LoadedProxyFile | None) -> LoadedScenario:
    """The scenario a proxy episode ran, from its trace's `upstream` block (and the proxy file, when it had one)."""
    upstream = started.get("upstream")
    if not isinstance(upstream, dict) or not isinstance(upstream.get("tools"), list):
        raise ScenarioError([Problem("", None, None, "", "the trace has no upstream tool list")])
    tools = [t for t in upstream["tools"] if isinstance(t, dict)]
    info = UpstreamInfo.from_json(upstream)
    scenario = build_scenario(tools, file, info)
    return LoadedScenario(
        model=scenario, path=file.path if file is not None else "", sha256=file.sha256 if file is not None else ""
    )

"""A suite's scenario as a file: what a run folder keeps (`scenarios/banking-SHA12.json`) so `score` reads it back
without AgentDojo, and what a trace's `scenario.sha256` names.

The bytes are canonical JSON (sorted keys, no spaces), so the same suite, version, facts and AgentDojo release give
the same file and hash in every process.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mcp_hazard.agentdojo.suite_scenario import AgentDojoScenario, AgentDojoToolSpec, InjectionTaskInfo, LoadedSuite
from mcp_hazard.errors import Problem, ScenarioError
from mcp_hazard.json_parse import loads
from mcp_hazard.proxy.environment import NOT_HERE
from mcp_hazard.scenario.models import Annotations, GoldenPath, GoldenStep, Task

KIND = "agentdojo-suite"
FORMAT = 1
MAX_SNAPSHOT_BYTES = 16 * 1024 * 1024
TOOL_FIELDS = ("name", "description", "input_schema", "effect", "checked_by", "retry_safe", "pages", "cross_check",
               "fallback_tools", "why")  # fmt: skip


def _path_json(path: GoldenPath) -> dict[str, Any]:
    steps = [{"id": step.id, "tool": step.tool, "arguments": step.arguments} for step in path.steps]
    return {"steps": steps, "answer": path.answer}


def dump_snapshot(model: AgentDojoScenario) -> bytes:
    tools = []
    for tool in model.tools:
        entry = {field: getattr(tool, field, None) for field in TOOL_FIELDS}
        entry["annotations"] = tool.annotations.model_dump(exclude_none=True) if tool.annotations else None
        tools.append(entry)
    data = {
        "kind": KIND, "format": FORMAT, "id": model.id, "title": model.title, "description": model.description,
        "source": model.source, "agentdojo_version": model.agentdojo_version, "tools": tools,
        "tasks": [{"id": t.id, "prompt": t.prompt, "golden_path": _path_json(t.golden_path)} for t in model.tasks],
        "injection_tasks": [{"id": i.id, "goal": i.goal, "golden_path": _path_json(i.golden_path)}
                            for i in model.injection_tasks],
        "injection_vectors": model.injection_vectors,
    }  # fmt: skip
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def is_snapshot(path: Path) -> bool:
    """Whether a file is a suite snapshot (a `.json` whose first bytes say so)."""
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    return head.startswith(b'{"agentdojo_version"') or f'"kind":"{KIND}"'.encode() in head


def _path(data: dict[str, Any]) -> GoldenPath:
    steps = [GoldenStep.model_construct(id=s["id"], tool=s["tool"], arguments=s.get("arguments") or {})
             for s in data.get("steps") or []]  # fmt: skip
    return GoldenPath.model_construct(steps=steps, answer=data.get("answer"))


def _tool(entry: dict[str, Any]) -> AgentDojoToolSpec:
    notes = entry.get("annotations")
    fields = {field: entry.get(field) for field in TOOL_FIELDS}
    return AgentDojoToolSpec.model_construct(
        **fields, title=None, output_schema=None, serves=[], behaviour=NOT_HERE, fallbacks=[], hazards=[],
        replacement=None, fields=[], listed={}, annotations=Annotations(**notes) if notes else None,
    )  # fmt: skip


def _injection(entry: dict[str, Any]) -> InjectionTaskInfo:
    path = _path(entry["golden_path"])
    return InjectionTaskInfo.model_construct(id=entry["id"], goal=entry["goal"], golden_path=path)


def load_snapshot(path: str | Path) -> LoadedSuite:
    """A snapshot read back: the scenario, with no AgentDojo behind it (scored, never served)."""
    file = Path(path)
    try:
        with file.open("rb") as handle:
            raw = handle.read(MAX_SNAPSHOT_BYTES + 1)  # not the whole file: a snapshot found may be any file
        if len(raw) > MAX_SNAPSHOT_BYTES:
            raise ValueError(f"larger than {MAX_SNAPSHOT_BYTES} bytes")
        data = loads(raw)
        if data.get("kind") != KIND or data.get("format") != FORMAT:
            raise ValueError(f"not a suite snapshot of format {FORMAT}")
        model = AgentDojoScenario.model_construct(
            format=1, id=data["id"], title=data["title"], description=data.get("description", ""),
            tools=[_tool(t) for t in data["tools"]],
            tasks=[Task.model_construct(id=t["id"], title=None, prompt=t["prompt"], answer=None, workflow="sequential",
                                        tools=None, golden_path=_path(t["golden_path"]), hazards=[], restate_known=None)
                   for t in data["tasks"]],
            generated=None, source=data.get("source", ""), agentdojo_version=data.get("agentdojo_version", ""),
            injection_tasks=[_injection(i) for i in data.get("injection_tasks") or []],
            injection_vectors=data.get("injection_vectors") or {},
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ScenarioError([Problem(str(file), None, None, "", f"cannot read the suite snapshot: {exc}")]) from None
    return LoadedSuite(model=model, path=model.source or str(file), sha256=hashlib.sha256(raw).hexdigest(),
                       snapshot=raw)  # fmt: skip

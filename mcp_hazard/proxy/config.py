"""The proxy file: which real server to reach, what each hazard needs to know about its tools, and optional tasks.

A real server's tools come with schemas but no golden path that could be run offline, so the facts a hazard needs
are declared here: which tools are safe to retry, which answer with the same facts (fallbacks, cross-checks), which
result fields a task reads, which list may be paged. Checked in two steps: the file alone when it is loaded (every
problem at file:line:column), then against the tools the server lists when the proxy connects (environment.py).
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_hazard.condition import Condition
from mcp_hazard.errors import Problem, ScenarioError
from mcp_hazard.scenario.files import read_source
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import JSON, AnswerSpec, GoldenPath, Identifier
from mcp_hazard.scenario.problems import Problems, validate_model
from mcp_hazard.scenario.yaml_source import Positions, parse_yaml

PROXY_FILE_KIND = "proxy"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class UpstreamConfig(_Strict):
    """How to reach the real server: a command that speaks MCP on stdio, or a Streamable HTTP URL."""

    command: list[str] | str | None = Field(
        default=None, description="The server's command line (a list, or one string split like a shell would)."
    )
    url: str | None = Field(
        default=None, description="The server's Streamable HTTP endpoint, e.g. http://127.0.0.1:3001/mcp."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables for the command.")
    cwd: str | None = Field(default=None, description="Working directory for the command.")
    timeout: float | None = Field(
        default=None, gt=0, le=86_400,
        description="Seconds to wait for each answer of the server (the command line's --upstream-timeout wins; "
        "default 60).",
    )  # fmt: skip

    @model_validator(mode="after")
    def _one_way(self) -> UpstreamConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' or 'url'")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("'url' must start with http:// or https://")
        if isinstance(self.command, str) and not shlex_split(self.command):
            raise ValueError("'command' is empty")
        if isinstance(self.command, list) and not self.command:
            raise ValueError("'command' is empty")
        return self

    def argv(self) -> list[str]:
        if isinstance(self.command, str):
            return shlex_split(self.command)
        return list(self.command or [])


def shlex_split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return []


class ProxyFallback(_Strict):
    """Another tool of the server that answers with the same facts, and how to call it with this tool's arguments."""

    tool: str = Field(min_length=1)
    arguments: dict[str, JSON] | None = Field(
        default=None,
        description="Arguments for the other tool; templates over this tool's arguments, e.g. {{ path }}. "
        "Default: the arguments of the same names.",
    )


class ToolNotes(_Strict):
    """What hazards need to know about one of the server's tools."""

    retry_safe: bool | None = Field(
        default=None,
        description="A repeated call has no further effect, so transient_error and latency may act on it. Default: "
        "the tool's own annotations (readOnlyHint or idempotentHint true).",
    )
    fallbacks: list[ProxyFallback] = Field(
        default_factory=list, description="Tools serving the same facts: the recovery path of permanent_error."
    )
    cross_check: list[str] = Field(
        default_factory=list,
        description="Independent tools serving the same facts, to cross-check a conflict or a silent wrong value. "
        "Default: the fallbacks.",
    )
    fields: list[str] = Field(
        default_factory=list,
        description="Where in the result the facts a task reads sit: dotted paths into the structured (or JSON) "
        "result, '$' for the whole text. silent_wrong_value changes one of them; conflict moves their numbers.",
    )
    pages: str | None = Field(
        default=None,
        description="The list in the result that pagination splits: a dotted path ('$' for the whole result); a text "
        "value is paged by lines.",
    )
    hazards: list[HazardSpec] = Field(
        default_factory=list, description="Hazards offered for this tool (applied with --hazard declared)."
    )


class ProxyTask(_Strict):
    """A task an agent does through the proxy. With one, the proxy also serves `submit_answer` and the task prompt."""

    id: Identifier
    title: str | None = None
    prompt: str = Field(min_length=1)
    answer: AnswerSpec | None = Field(
        default=None, description="The expected answer; without it, the scorer judges recovery but not the answer."
    )
    workflow: Literal["sequential", "parallel", "mixed"] = "sequential"
    tools: list[str] | None = Field(default=None, description="Tools served for this task; default all.")
    golden_path: GoldenPath | None = Field(
        default=None,
        description="Calls of the real tools that reach the answer: the reference agents follow it (never served).",
    )
    hazards: list[HazardSpec] = Field(default_factory=list, description="Hazards offered for this task.")


class ProxyFile(_Strict):
    """A real MCP server behind mcp-hazard: how to reach it, what hazards need to know, and optional tasks."""

    format: Literal[1] = Field(default=1, description="Version of this file format.")
    kind: Literal["proxy"] = Field(description="Says this is a proxy file, not a scenario.")
    id: Identifier
    title: str = Field(min_length=1)
    description: str = ""
    upstream: UpstreamConfig | None = Field(
        default=None, description="The server to reach (the command line's --upstream-cmd/--upstream-url win)."
    )
    tools: dict[str, ToolNotes] = Field(default_factory=dict, description="Notes on the server's tools, by name.")
    tasks: list[ProxyTask] = Field(default_factory=list)
    condition: Condition | None = Field(
        default=None,
        description="The condition when the command line names none: seed, profile, hazards, interventions.",
    )


@dataclass(frozen=True)
class LoadedProxyFile:
    """A validated proxy file, where it came from (path and SHA-256, as a trace records them) and where each of its
    fields sits, so problems found later against the real server still name file:line:column."""

    model: ProxyFile
    path: str
    sha256: str
    positions: Positions

    def problems(self) -> Problems:
        return Problems(self.path, self.positions)


def is_proxy_data(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == PROXY_FILE_KIND


def is_proxy_file(path: Any) -> bool:
    """Whether a YAML file says `kind: proxy` at its top level (read cheaply: the first 64 KiB, a plain line)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(65536).decode("utf-8", errors="replace")
    except OSError:
        return False
    return any(line.strip().replace('"', "").replace("'", "") == "kind: proxy" for line in head.splitlines()
               if not line.startswith((" ", "\t")))  # fmt: skip


def parse_proxy_file(text: str, file: str, raw: bytes | None = None) -> LoadedProxyFile:
    data, positions = parse_yaml(text, file)
    problems = Problems(file, positions)
    if not isinstance(data, dict):
        problems.add((), "a proxy file must be a mapping with kind: proxy, id and title")
        raise ScenarioError(problems.items)
    model = validate_model(ProxyFile, data, problems)
    if model is None:
        raise ScenarioError(problems.items)
    _check_file(model, problems)
    if problems.items:
        raise ScenarioError(problems.items)
    digest = hashlib.sha256(raw if raw is not None else text.encode("utf-8")).hexdigest()
    return LoadedProxyFile(model=model, path=file, sha256=digest, positions=positions)


def load_proxy_file(path: str) -> LoadedProxyFile:
    raw, text = read_source(path)
    return parse_proxy_file(text, path, raw)


def _check_file(model: ProxyFile, problems: Problems) -> None:
    """What can be checked without the server: unique task ids, golden paths that refer to earlier steps only."""
    from mcp_hazard.scenario.expressions import ExpressionError, referenced_names, template_expressions

    seen: set[str] = set()
    for i, task in enumerate(model.tasks):
        if task.id in seen:
            problems.add(("tasks", i, "id"), f"duplicate task id {task.id!r}")
        seen.add(task.id)
        if task.golden_path is None:
            continue
        steps: set[str] = set()
        for j, step in enumerate(task.golden_path.steps):
            where = ("tasks", i, "golden_path", "steps", j)
            if step.id in steps:
                problems.add((*where, "id"), f"duplicate step id {step.id!r}")
            for source in template_expressions(step.arguments):
                try:
                    unknown = referenced_names(source) - steps
                except ExpressionError as exc:
                    problems.add((*where, "arguments"), str(exc))
                    continue
                if unknown:
                    problems.add((*where, "arguments"), f"refers to {sorted(unknown)}, which are not earlier steps")
            steps.add(step.id)
        for source in template_expressions(task.golden_path.answer):
            try:
                unknown = referenced_names(source) - steps
            except ExpressionError as exc:
                problems.add(("tasks", i, "golden_path", "answer"), str(exc))
                continue
            if unknown:
                problems.add(("tasks", i, "golden_path", "answer"), f"refers to {sorted(unknown)}, which are not steps")
    for name, notes in model.tools.items():
        for j, fallback in enumerate(notes.fallbacks):
            for source in template_expressions(fallback.arguments or {}):
                try:
                    referenced_names(source)
                except ExpressionError as exc:
                    problems.add(("tools", name, "fallbacks", j, "arguments"), str(exc))


def proxy_json_schema() -> dict[str, Any]:
    schema = ProxyFile.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "mcp-hazard proxy file"
    return schema


def no_file_problem(file: str, message: str) -> ScenarioError:
    return ScenarioError([Problem(file, None, None, "", message)])

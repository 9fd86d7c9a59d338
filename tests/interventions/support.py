"""Helpers for the intervention tests: the shipped scenarios, episodes built in this process, and readers of a
listing (argument names, descriptions). No fixtures here; no mocks anywhere: episodes are the real `Episode`."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from conftest import CliRun, run_main

from mcp_hazard.condition import Condition
from mcp_hazard.interventions import REGISTRY
from mcp_hazard.interventions.surface import properties
from mcp_hazard.load import load_scenarios
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task, ToolSpec
from mcp_hazard.server.served_episode import SUBMIT_TOOL, Episode

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TRAVEL = SCENARIOS_DIR / "travel.yaml"

KINDS: list[str] = sorted(REGISTRY)  # iterated, never listed by hand: a new intervention is covered or fails
PAIRS: list[tuple[str, str]] = [(a, b) for a in KINDS for b in KINDS]  # ordered, repeats included
RENAMING = {"rename", "replace", "names=random", "names=realistic", "names=contradicting",
            "names=random-realistic"}  # kinds that change tool names  # fmt: skip


@functools.cache
def shipped() -> tuple[LoadedScenario, ...]:
    return tuple(load_scenarios([SCENARIOS_DIR]))


def scenario(scenario_id: str) -> LoadedScenario:
    return next(s for s in shipped() if s.id == scenario_id)


def task_serving(loaded: LoadedScenario, tool: str) -> Task:
    """The first task whose listing holds `tool`."""
    return next(t for t in loaded.model.tasks if any(spec.name == tool for spec in loaded.model.task_tools(t)))


def episode(
    loaded: LoadedScenario,
    interventions: list[str] | tuple[str, ...] = (),
    *,
    seed: int = 0,
    task: Task | None = None,
    trace_dir: Path | None = None,
    episode_id: str = "intervention-test",
) -> Episode:
    return Episode(
        episode_id=episode_id, scenario=loaded, task=task or loaded.model.tasks[0],
        condition=Condition(seed=seed, interventions=list(interventions)), trace_dir=trace_dir, transport="memory",
    )  # fmt: skip


def listing(
    loaded: LoadedScenario, interventions: list[str] | tuple[str, ...] = (), seed: int = 0
) -> list[dict[str, Any]]:
    """The served tools (submit_answer included) as the wire shows them."""
    return [dump_tool(tool) for tool in episode(loaded, interventions, seed=seed).served_tools()]


def dump_tool(tool: types.Tool) -> dict[str, Any]:
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


def scenario_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tool for tool in tools if tool["name"] != SUBMIT_TOOL]


def original_names(loaded: LoadedScenario) -> set[str]:
    """Every original tool and argument name of the scenario (what no intervention may reuse as a new name)."""
    tools = loaded.model.tools
    return {t.name for t in tools} | {arg for t in tools for arg in properties(t.input_schema)}


def argument_names(schema: dict[str, Any]) -> list[str]:
    """The served argument names, top level and inside objects (replace nests them in one `request` object)."""
    names: list[str] = []
    for name, sub in properties(schema).items():
        names.append(name)
        if isinstance(sub, dict) and sub.get("type") == "object":
            names.extend(argument_names(sub))
    return names


def descriptions(schema: Any) -> list[str]:
    """Every `description` of a JSON Schema, nested ones included (a property *named* description is no text)."""
    out: list[str] = []
    if not isinstance(schema, dict):
        return out
    if isinstance(schema.get("description"), str):
        out.append(schema["description"])
    for sub in properties(schema).values():
        out.extend(descriptions(sub))
    for key in ("items", "additionalProperties", "not"):
        out.extend(descriptions(schema.get(key)))
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in schema.get(key) or []:
            out.extend(descriptions(sub))
    for sub in (schema.get("$defs") or {}).values():
        out.extend(descriptions(sub))
    return out


def tool_texts(tool: dict[str, Any]) -> list[str]:
    """All the prose an agent reads for a tool: its description and every description in its schemas."""
    return [
        tool.get("description", ""),
        *descriptions(tool.get("inputSchema")),
        *descriptions(tool.get("outputSchema")),
    ]


def words(text: str) -> list[str]:
    """Words as the substitution sees them: `\\w+` runs, so an identifier such as `store_id` is one word."""
    return [w.lower() for w in re.findall(r"\w+", text)]


def spec_of(loaded: LoadedScenario, name: str) -> ToolSpec:
    spec = loaded.model.tool(name)
    assert spec is not None, name
    return spec


CLI_TIMEOUT = 150.0


def main_cli(*args: str) -> CliRun:
    """`mcp-hazard ARGS` through `main()` in this process, as `run_cli` runs the program (no colour, 200 columns): for
    the tests where the process is not the subject."""
    return run_main(*args, cwd=REPO_ROOT, env={"NO_COLOR": "1", "COLUMNS": "200"})


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = CLI_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """`python -m mcp_hazard ARGS` from the repository root, to the end (bounded), without a terminal."""
    environment = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    try:
        return subprocess.run(
            [sys.executable, "-m", "mcp_hazard", *args], cwd=REPO_ROOT, env=environment, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"`mcp-hazard {' '.join(args)}` did not finish within {timeout}s") from exc

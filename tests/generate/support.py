"""Helpers for the generator tests: read the structure of a generated scenario back from the file's data alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_hazard.scenario.models import Scenario


@dataclass
class FileGraph:
    """The DAG a scenario file describes, rebuilt from its tools and golden path (independent of the generator)."""

    inputs: dict[str, list[str]]  # tool -> argument names
    output: dict[str, str]  # tool -> result field it makes
    core: list[str]  # golden-path tools, in path order
    target: str
    given: dict[str, int]  # input variables and their values, from the golden path's literal arguments

    @property
    def distractors(self) -> list[str]:
        return sorted(set(self.inputs) - set(self.core))

    @property
    def core_variables(self) -> set[str]:
        return {v for t in self.core for v in self.inputs[t]} | {self.output[t] for t in self.core}

    def longest_path(self) -> int:
        """Edges on the longest path of the core (the depth), counted from the file (memoised depth-first search)."""
        made_by = {self.output[t]: t for t in self.core}
        memo: dict[str, int] = {}

        def length(tool: str) -> int:
            if tool not in memo:
                memo[tool] = max((1 + length(made_by[v]) for v in self.inputs[tool] if v in made_by), default=0)
            return memo[tool]

        return max(length(t) for t in self.core)


def file_graph(scenario: Scenario) -> FileGraph:
    task = scenario.tasks[0]
    inputs = {t.name: list(t.input_schema["properties"]) for t in scenario.tools}
    output: dict[str, str] = {}
    for tool in scenario.tools:
        result: Any = tool.behaviour.result  # type: ignore[union-attr]
        made = [k for k, v in result.items() if v == "{{ value }}"]
        assert len(made) == 1, (tool.name, result)
        output[tool.name] = made[0]
    given = {k: v for step in task.golden_path.steps for k, v in step.arguments.items() if isinstance(v, int)}
    answer = str(task.golden_path.answer)
    target = answer.strip("{} ").split(".", 1)[1]
    return FileGraph(inputs, output, [s.tool for s in task.golden_path.steps], target, given)

"""Prove that every hazard instance stays solvable: run each golden path through a real episode (the server's own
call path, in process, no sleeping) with the hazards' declared recovery paths, for a range of seeds.

The checker is the proof, not an agent under test: each kind says how to get past what it did (its solvability
step, hazards/solving.py): send the call in the current shape (corrected call, re-list), retry, fall back to a
sibling tool, follow pages, cross-check a stale source against a fresh sibling, check the state after a lost reply.
The checker retries a rejected call, checks that output served as text still carries every value (normalise), and
reports the first seed and step that no recovery path gets past.

It sits with the runner, not with the hazards: it drives a real `Episode` (the server floor), as `verify` drives
agents (runner/verification.py). `mcp-hazard validate` is its user.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp_hazard.condition import Condition
from mcp_hazard.hazards.base import fallback_arguments, fallbacks_for
from mcp_hazard.hazards.needed_values import needed_values
from mcp_hazard.hazards.solving import MapsArguments, Settled, SolvesFailure, SolvesResult, Unsolved
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.arguments import describe_value
from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.server.served_episode import Episode

MAX_ATTEMPTS = 6


@dataclass(frozen=True)
class Unsolvable:
    scenario: str
    task: str
    seed: int
    step: int | None
    tool: str | None
    message: str

    def __str__(self) -> str:
        where = f"step {self.step + 1} ({self.tool})" if self.step is not None else "answer"
        return f"{self.scenario}/{self.task}: seed {self.seed}, {where}: {self.message}"


def _adapt(episode: Episode, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool's current served name, and the arguments rewritten to its current interface by every kind that
    changed it (`to_current`)."""
    name = next(view.name for view in episode.views() if view.original == tool)
    args = dict(arguments)
    for hazard, _targets in reversed(episode.hazards):  # the server maps back in hazard order, so map out in reverse
        if isinstance(hazard, MapsArguments):
            args = hazard.to_current(tool, args)
    return name, args


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value)]


class _Checker:
    """The `Solver` the kinds' solvability steps use (hazards/solving.py)."""

    def __init__(self, loaded: LoadedScenario, task: Task, condition: Condition) -> None:
        self.loaded = loaded
        self.task = task
        self.episode = Episode(
            episode_id="solvability", scenario=loaded, task=task, condition=condition, trace_dir=None,
            transport="memory", sleep=False,
        )  # fmt: skip
        self.now = 0.0  # the episode's clock: it does not sleep, so waits only move this
        self.episode.engine.clock = lambda: self.now
        self.episode.start("solvability")
        self.hazards = {hazard.index: hazard for hazard, _ in self.episode.hazards}
        self.needed: list[Any] = []

    def wait(self, seconds: float) -> None:
        self.now += seconds

    def touched(self, event: dict[str, Any]) -> list[Any]:
        return [self.hazards[i] for i in event.get("hazards", []) if i in self.hazards]

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        name, args = _adapt(self.episode, tool, arguments)
        result = await self.episode.call_tool(name, args)
        event = next(e for e in reversed(self.episode.trace.events) if e["type"] == "tool_called")
        return not result.is_error, event

    async def step(self, index: int, tool: str, arguments: dict[str, Any]) -> Any:
        self.needed = needed_values(self.task, index, self.truth(tool, arguments))
        last = "no attempt"
        for _ in range(MAX_ATTEMPTS):
            ok, event = await self.call(tool, arguments)
            if ok:
                return await self.settle(tool, arguments, event)
            last = str(event.get("error"))
            for hazard in self.touched(event):
                settled = (
                    await hazard.solve_failed(self, tool, arguments, event)
                    if isinstance(hazard, SolvesFailure)
                    else None
                )
                if settled is not None:
                    return settled.value
            if event["outcome"] not in ("rejected", "lost"):
                raise Unsolved(f"{event['outcome']}: {last}")
        raise Unsolved(f"still failing after {MAX_ATTEMPTS} attempts: {last}")

    def truth(self, tool: str, arguments: dict[str, Any]) -> Any:
        spec = self.loaded.model.tool(tool)
        assert spec is not None
        return run_behaviour(spec, arguments, allow_python=self.episode.allow_python).result

    async def siblings(self, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        spec = self.loaded.model.tool(tool)
        assert spec is not None
        answered = []
        for other in fallbacks_for(self.loaded.model, self.task, tool):
            mapped = fallback_arguments(self.loaded.model, spec, other, arguments)
            if mapped is None:
                continue
            ok, event = await self.call(other, mapped)
            if ok:
                answered.append(event)
        return answered

    async def settle(self, tool: str, arguments: dict[str, Any], event: dict[str, Any]) -> Any:
        value = event.get("result")
        if event.get("text") is not None:  # served as text: every value must still be in it (normalise)
            text = event["text"]
            lost = [leaf for leaf in _leaves(value) if leaf not in text and json.dumps(leaf)[1:-1] not in text]
            if lost:
                raise Unsolved(f"drifted output lost values {lost[:3]}")
        for hazard in self.touched(event):
            if isinstance(hazard, SolvesResult):
                value = await hazard.solve_result(self, tool, arguments, event, value)
                if isinstance(value, Settled):
                    return value.value
        return value


async def check_instance(loaded: LoadedScenario, task: Task, condition: Condition) -> Unsolvable | None:
    checker = _Checker(loaded, task, condition)
    results: dict[str, Any] = {}
    for index, step in enumerate(task.golden_path.steps):
        try:
            arguments = render(step.arguments, results)
            results[step.id] = await checker.step(index, step.tool, arguments)
        except (Unsolved, ExpressionError) as exc:
            return Unsolvable(loaded.id, task.id, condition.seed, index, step.tool, str(exc))
    try:
        answer = render(task.golden_path.answer, results)
    except ExpressionError as exc:
        return Unsolvable(loaded.id, task.id, condition.seed, None, None, str(exc))
    if not answer_matches(task.answer, answer if isinstance(answer, str) else json.dumps(answer)):
        return Unsolvable(loaded.id, task.id, condition.seed, None, None,
                          f"recovered path yields {describe_value(answer)}, not the canonical answer")  # fmt: skip
    return None

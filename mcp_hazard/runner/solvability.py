"""Prove that every hazard instance stays solvable: run each golden path through a real episode (the server's own
call path, in process, no sleeping) with the hazards' declared recovery paths, for a range of seeds.

The checker knows the hazards (it is the proof, not an agent under test): after a rejection it re-lists and sends
the call in the new shape (corrected call, re-list), retries transient failures, falls back to a sibling tool with
a declared or derivable argument mapping, follows pages, checks that drifted output still carries every value
(normalise), cross-checks a stale source against a fresh sibling, and after a lost reply checks the state with the
write's `checked_by` tools, repeating the write only if they do not show it. It reports the first seed and step that no
recovery path gets past.

It sits with the runner, not with the hazards: it drives a real `Episode` (the server floor), as `verify` drives
agents (runner/verify.py). `mcp-hazard validate` is its user.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp_hazard.condition import Condition
from mcp_hazard.hazards.base import fallback_arguments, fallbacks_for
from mcp_hazard.hazards.drift import SpecDrift
from mcp_hazard.hazards.facts import needed_values, supplies
from mcp_hazard.hazards.invocation import InvocationError
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.arguments import describe_value
from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.server.episode import Episode

MAX_ATTEMPTS = 6
MAX_PAGES = 100


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


class _Stuck(Exception):
    pass


def _adapt(episode: Episode, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool's current served name, and the arguments rewritten to its current interface."""
    name = next(view.name for view in episode.views() if view.original == tool)
    args = dict(arguments)
    for hazard, _targets in reversed(episode.hazards):  # the server maps back in hazard order, so map out in reverse
        if isinstance(hazard, InvocationError) and tool in hazard.active:
            args = hazard.active[tool].from_original(args)
        if isinstance(hazard, SpecDrift) and tool in hazard.drifted:
            change = hazard.drifted[tool]
            if change is not None:
                args = change.from_original(args)
    return name, args


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value)]


def _values(value: Any) -> list[Any]:
    """The scalar values in a result, as they are (`supplies` compares numbers as numbers)."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _values(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _values(item)]
    return [] if value is None else [value]


class _Checker:
    def __init__(self, loaded: LoadedScenario, task: Task, condition: Condition) -> None:
        self.loaded = loaded
        self.task = task
        self.episode = Episode(
            episode_id="solvability", scenario=loaded, task=task, condition=condition, trace_dir=None,
            transport="memory", sleep=False,
        )  # fmt: skip
        self.episode.start("solvability")
        self.kinds = {hazard.index: hazard.kind for hazard, _ in self.episode.hazards}
        self.needed: list[Any] = []

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
            kinds = {self.kinds[i] for i in event.get("hazards", [])}
            if "permanent_error" in kinds:
                return await self.fall_back(tool, arguments)
            if event["outcome"] == "lost":  # check the state before repeating a write whose reply was lost
                shown = await self.applied(tool, event)
                if shown is not None:
                    return shown
                continue
            if event["outcome"] != "rejected":
                raise _Stuck(f"{event['outcome']}: {last}")
        raise _Stuck(f"still failing after {MAX_ATTEMPTS} attempts: {last}")

    def truth(self, tool: str, arguments: dict[str, Any]) -> Any:
        spec = self.loaded.model.tool(tool)
        assert spec is not None
        return run_behaviour(spec, arguments, allow_python=self.episode.allow_python).result

    async def siblings(self, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """Ask every reachable tool serving the same fact; the events of the calls that answered."""
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

    async def applied(self, tool: str, event: dict[str, Any]) -> Any:
        """After a lost reply: the write's result when a read tool it is checked by shows it (every value of the
        result in that read's answer), else None (it did not go through: repeat it)."""
        spec = self.loaded.model.tool(tool)
        assert spec is not None
        done = event.get("result")
        for other in spec.checked_by:
            target = self.loaded.model.tool(other)
            if target is None:
                continue
            mapped = {k: v for k, v in event["arguments"].items() if k in (target.input_schema.get("properties") or {})}
            ok, check = await self.call(other, mapped)
            if ok and supplies(_values(done), check.get("result")):
                return done
        return None

    async def fall_back(self, tool: str, arguments: dict[str, Any]) -> Any:
        for sibling in await self.siblings(tool, arguments):
            if supplies(self.needed, sibling.get("result")):
                return self.truth(tool, arguments)  # the fallback answered with every value the task needs
        raise _Stuck("permanent failure and no fallback tool answers with the values the task needs")

    async def settle(self, tool: str, arguments: dict[str, Any], event: dict[str, Any]) -> Any:
        value = event.get("result")
        kinds = {self.kinds[i] for i in event.get("hazards", [])}
        if "silent_wrong_value" in kinds:  # verify: the same call again reads the right value
            ok, again = await self.call(tool, arguments)
            if not ok:
                raise _Stuck(f"re-reading a silently wrong value failed: {again.get('error')}")
            return await self.settle(tool, arguments, again)
        if event.get("text") is not None:
            text = event["text"]
            lost = [leaf for leaf in _leaves(value) if leaf not in text and json.dumps(leaf)[1:-1] not in text]
            if lost:
                raise _Stuck(f"drifted output lost values {lost[:3]}")
        if "pagination" in kinds and isinstance(value, dict) and value.get("total_pages"):
            value = await self.all_pages(tool, arguments, value)
        if "conflict" in kinds and isinstance(value, dict) and value.get("source") == "cache":
            for sibling in await self.siblings(tool, arguments):
                result = sibling.get("result")
                if isinstance(result, dict) and result.get("source") == "primary" and supplies(self.needed, result):
                    return self.truth(tool, arguments)
            raise _Stuck("conflicting sources and no fresh source to cross-check")
        return value

    async def all_pages(self, tool: str, arguments: dict[str, Any], first: dict[str, Any]) -> Any:
        key = next(k for k, v in first.items() if isinstance(v, list))
        items = list(first[key])
        total = int(first["total_pages"])
        for page in range(2, min(total, MAX_PAGES) + 1):
            ok, event = await self.call(tool, {**arguments, "page": page})
            if not ok:
                raise _Stuck(f"page {page} failed: {event.get('error')}")
            items.extend(event["result"][key])
        merged = {k: v for k, v in first.items() if k not in ("page", "total_pages", "next_page")}
        merged[key] = items
        return merged


async def check_instance(loaded: LoadedScenario, task: Task, condition: Condition) -> Unsolvable | None:
    checker = _Checker(loaded, task, condition)
    results: dict[str, Any] = {}
    for index, step in enumerate(task.golden_path.steps):
        try:
            arguments = render(step.arguments, results)
            results[step.id] = await checker.step(index, step.tool, arguments)
        except (_Stuck, ExpressionError) as exc:
            return Unsolvable(loaded.id, task.id, condition.seed, index, step.tool, str(exc))
    try:
        answer = render(task.golden_path.answer, results)
    except ExpressionError as exc:
        return Unsolvable(loaded.id, task.id, condition.seed, None, None, str(exc))
    if not answer_matches(task.answer, answer if isinstance(answer, str) else json.dumps(answer)):
        return Unsolvable(loaded.id, task.id, condition.seed, None, None,
                          f"recovered path yields {describe_value(answer)}, not the canonical answer")  # fmt: skip
    return None

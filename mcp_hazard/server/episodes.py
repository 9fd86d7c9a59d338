"""Create and find episodes. Over HTTP many live at once; each is named by an id that appears in its MCP URL."""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.scenario.load import LoadedScenario
from mcp_hazard.server.episode import Episode

EPISODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def new_episode_id(scenario: str, task: str, seed: int) -> str:
    """Readable and unique: the condition, then a random suffix. The id is run metadata, never a decision input."""
    return f"{scenario}.{task}.seed{seed}.{secrets.token_hex(4)}"


def parse_condition(fields: dict[str, Any]) -> Condition:
    """A condition from JSON-like fields; hazards may be given as `KIND:key=value` strings, as on the CLI."""
    from mcp_hazard.hazards import parse_hazard_option

    hazards = fields.get("hazards")
    if isinstance(hazards, str):
        hazards = [hazards]
    if isinstance(hazards, list):
        parsed: list[Any] = []
        for item in hazards:
            if isinstance(item, str):
                option = parse_hazard_option(item)
                parsed.extend(option if isinstance(option, list) else [option])
            else:
                parsed.append(item)
        fields = {**fields, "hazards": parsed}
    try:
        return Condition.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "condition"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise UserError(f"{where}: {message}") from None


class EpisodeRegistry:
    """The scenarios a server offers and the episodes it has created."""

    def __init__(
        self, scenarios: list[LoadedScenario], trace_dir: Path, *, transport: str, allow_python: bool = False
    ) -> None:
        self.scenarios = {scenario.id: scenario for scenario in scenarios}
        self.trace_dir = trace_dir
        self.transport = transport
        self.allow_python = allow_python
        self.episodes: dict[str, Episode] = {}

    def create(
        self,
        scenario_id: str | None = None,
        task_id: str | None = None,
        condition: Condition | None = None,
        episode_id: str | None = None,
        agent: str | None = None,
    ) -> Episode:
        """A new episode; the task defaults to the scenario's first, the scenario to the only one loaded."""
        if scenario_id is None:
            if len(self.scenarios) != 1:
                raise UserError(f"name a scenario; this server has {', '.join(sorted(self.scenarios))}")
            scenario_id = next(iter(self.scenarios))
        scenario = self.scenarios.get(scenario_id)
        if scenario is None:
            raise UserError(f"unknown scenario {scenario_id!r}; known: {', '.join(sorted(self.scenarios))}")
        task = scenario.model.tasks[0] if task_id is None else scenario.model.task(task_id)
        if task is None:
            known = ", ".join(t.id for t in scenario.model.tasks)
            raise UserError(f"scenario {scenario_id!r} has no task {task_id!r}; its tasks: {known}")
        condition = condition or Condition()
        if episode_id is None:
            episode_id = new_episode_id(scenario.id, task.id, condition.seed)
        elif not EPISODE_ID.match(episode_id):
            raise UserError(f"episode id {episode_id!r} must be 1-128 letters, digits, '.', '_' or '-'")
        if agent is not None and not EPISODE_ID.match(agent):
            raise UserError(f"agent name {agent!r} must be 1-128 letters, digits, '.', '_' or '-'")
        if episode_id in self.episodes:
            raise UserError(f"episode {episode_id!r} already exists")
        episode = Episode(
            episode_id=episode_id,
            scenario=scenario,
            task=task,
            condition=condition,
            trace_dir=self.trace_dir,
            transport=self.transport,
            allow_python=self.allow_python,
            agent=agent,
        )
        self.episodes[episode_id] = episode
        return episode

    def get(self, episode_id: str) -> Episode | None:
        return self.episodes.get(episode_id)

    def close_all(self, reason: str) -> None:
        for episode in self.episodes.values():
            episode.end(reason)

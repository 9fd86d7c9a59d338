"""Create and find episodes. Over HTTP many live at once; each is named by an id that appears in its MCP URL."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError, first_error
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.suggest import did_you_mean
from mcp_hazard.trace.storage import check_writable

EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", re.ASCII)
"""Used with fullmatch only: `$` would let a trailing newline through, and the id names a file on disk."""

DEFAULT_EPISODE_TTL = 600.0
"""Seconds an open episode may go without a request before it is released (far longer than any hazard delay)."""
ENDED_TTL_CAP = 60.0
"""Ended episodes are released after min(TTL, this): the agent and the operator get a minute to read the outcome."""
SWEEP_INTERVAL = 1.0
"""A sweep walks every episode, so it runs at most this often (seconds) however many requests arrive."""
SESSIONS_PER_EPISODE = 32
"""Legacy-era MCP sessions one episode holds open; opening one more closes its least recently used."""


class EpisodeConflict(UserError):
    """The id is taken, here or on disk: HTTP answers 409 rather than 400."""


def valid_id(text: object) -> bool:
    """An episode or agent name: 1-128 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit."""
    return isinstance(text, str) and EPISODE_ID.fullmatch(text) is not None


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
        where, message = first_error(exc)
        raise UserError(f"{where or 'condition'}: {message.removeprefix('Value error, ')}") from None


class EpisodeRegistry:
    """The scenarios a server offers and the episodes it has created."""

    def __init__(
        self,
        scenarios: list[LoadedScenario],
        trace_dir: Path,
        *,
        transport: str,
        allow_python: bool = False,
        ttl: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        make_episode: Callable[..., Episode] = Episode,
        default_condition: Condition | None = None,
        report_trace_failures: bool = True,
        runner: bool = False,
    ) -> None:
        """`ttl=None` never releases an episode (one run's in-process host); a server passes --episode-ttl.
        `report_trace_failures=False`: an episode whose trace cannot be written logs nothing (a run stops and says
        so once). `runner=True`: `mcp-hazard run` drives these episodes and ends each trace with `agent_ended`
        (recorded in `episode_started`, so a trace without it reads as interrupted).

        `clock` decides only when an episode is released from memory, never anything a trace records as a
        decision (docs/architecture.md, "Determinism"): it is monotonic so a wall-clock jump cannot release everything
        at once.
        """
        self.scenarios = {scenario.id: scenario for scenario in scenarios}
        self.trace_dir = trace_dir
        self.transport = transport
        self.allow_python = allow_python
        self.ttl = ttl
        self.clock = clock
        self.make_episode = make_episode  # a proxy's episodes forward calls to a real server
        self.default_condition = default_condition or Condition()  # for a request that names no condition
        self.episodes: dict[str, Episode] = {}
        self.last_seen: dict[str, float] = {}
        self.order: dict[str, int] = {}
        self.created = 0
        self.released = 0
        self.sessions: dict[str, str] = {}
        """Legacy-era MCP session id -> the episode it was opened on (so a session cannot cross episodes)."""
        self.sessions_of: dict[str, dict[str, None]] = {}
        """Episode -> its sessions, the least recently used first."""
        self._last_sweep = clock()
        self.report_trace_failures = report_trace_failures
        self.runner = runner

    def trace_path(self, episode_id: str) -> Path:
        """Where an episode's trace goes; the id was checked with fullmatch, so it is one plain file name."""
        return self.trace_dir / f"{episode_id}.jsonl"

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
        scenario = self.scenarios.get(scenario_id) if isinstance(scenario_id, str) else None  # a client sends any JSON
        if scenario is None:
            hint = did_you_mean(str(scenario_id), self.scenarios)
            raise UserError(f"unknown scenario {_shown(scenario_id)}{hint}; known: {', '.join(sorted(self.scenarios))}")
        task = scenario.model.tasks[0] if task_id is None else scenario.model.task(task_id)
        if task is None:
            known = ", ".join(t.id for t in scenario.model.tasks)
            hint = did_you_mean(str(task_id), [t.id for t in scenario.model.tasks])
            raise UserError(f"scenario {scenario_id!r} has no task {_shown(task_id)}{hint}; its tasks: {known}")
        condition = condition or self.default_condition
        if episode_id is None:
            episode_id = new_episode_id(scenario.id, task.id, condition.seed)
            while episode_id in self.episodes or self.trace_path(episode_id).exists():
                episode_id = new_episode_id(scenario.id, task.id, condition.seed)
        elif not valid_id(episode_id):
            raise UserError(f"episode id {_shown(episode_id)} must be 1-128 letters, digits, '.', '_' or '-'")
        if agent is not None and not valid_id(agent):
            raise UserError(f"agent name {_shown(agent)} must be 1-128 letters, digits, '.', '_' or '-'")
        if episode_id in self.episodes:
            raise EpisodeConflict(f"episode {episode_id!r} already exists")
        if self.trace_path(episode_id).exists():
            raise EpisodeConflict(
                f"episode {episode_id!r} already has a trace ({episode_id}.jsonl in the trace directory); "
                "traces are never appended to or overwritten: pick another id"
            )
        if self.transport == "http":  # many episodes over a server's life: the disk may have filled up since start
            check_writable(self.trace_dir, "the trace folder")
        # A scenario whose tools do not run from behaviours (an AgentDojo suite) makes its own episodes.
        make = getattr(scenario, "episode_factory", None) or self.make_episode
        episode = make(
            episode_id=episode_id,
            scenario=scenario,
            task=task,
            condition=condition,
            trace_dir=self.trace_dir,
            transport=self.transport,
            allow_python=self.allow_python,
            agent=agent,
        )
        episode.report_trace_failure = self.report_trace_failures
        episode.runner = self.runner
        self.sweep()
        self.episodes[episode_id] = episode
        self.last_seen[episode_id] = self.clock()
        self.order[episode_id] = self.created
        self.created += 1
        return episode

    def get(self, episode_id: str) -> Episode | None:
        """The live episode; a lookup counts as activity, so an episode in use is never released under its agent."""
        episode = self.episodes.get(episode_id)
        if episode is not None:
            self.last_seen[episode_id] = self.clock()
        return episode

    def peek(self, episode_id: str) -> Episode | None:
        """The live episode, without counting as activity (listings must not keep everything alive)."""
        return self.episodes.get(episode_id)

    def release(self, episode_id: str) -> None:
        """Forget an episode (its trace stays on disk). An open one is ended first as `disconnected`: its agent went
        quiet for the whole TTL, which is what a client that left looks like; one no client ever joined as
        `never_connected`, with a trace of its own (Episode.close); its file handle is closed either way."""
        episode = self.episodes.pop(episode_id, None)
        self.last_seen.pop(episode_id, None)
        self.order.pop(episode_id, None)
        if episode is None:
            return
        for session in self.sessions_of.pop(episode_id, {}):
            self.sessions.pop(session, None)
        episode.close("disconnected" if episode.started else "never_connected")
        self.released += 1

    def session_episode(self, session: str) -> str | None:
        """The episode a session was issued on, or None for a session id this server never issued."""
        return self.sessions.get(session)

    def bind_session(self, session: str, episode_id: str) -> str:
        """The episode a session belongs to, binding it to `episode_id` on first sight (HTTP binds only the session
        ids the SDK issues, as it issues them)."""
        bound = self.sessions.setdefault(session, episode_id)
        if bound == episode_id:
            self.sessions_of.setdefault(episode_id, {})[session] = None
        return bound

    def used_session(self, session: str, episode_id: str) -> None:
        """A request came on `session`: it is the episode's most recently used."""
        held = self.sessions_of.get(episode_id)
        if held is not None and held.pop(session, False) is None:
            held[session] = None

    def crowding(self, episode_id: str) -> list[str]:
        """The sessions to close before the episode opens another, so it holds at most SESSIONS_PER_EPISODE: the
        least recently used. One client making sessions without closing them would otherwise fill the server's
        (the SDK's 10,000), and every other episode's agent would be refused a session."""
        held = self.sessions_of.get(episode_id, {})
        return list(held)[: max(0, len(held) - SESSIONS_PER_EPISODE + 1)]

    def unbind_session(self, session: str) -> None:
        """The client closed its session (DELETE): forget it now rather than with the episode."""
        episode_id = self.sessions.pop(session, None)
        if episode_id is not None:
            self.sessions_of.get(episode_id, {}).pop(session, None)

    def sweep(self, *, force: bool = False) -> int:
        """Release ended episodes idle for min(TTL, 60 s) and open ones idle for the TTL; how many were released."""
        if self.ttl is None:
            return 0
        now = self.clock()
        if not force and now - self._last_sweep < SWEEP_INTERVAL:
            return 0
        self._last_sweep = now
        ended_ttl = min(self.ttl, ENDED_TTL_CAP)
        stale = [
            episode_id
            for episode_id, seen in self.last_seen.items()
            if now - seen >= (ended_ttl if self.episodes[episode_id].ended else self.ttl)
        ]
        for episode_id in stale:
            self.release(episode_id)
        return len(stale)

    def page(self, limit: int, after: int | None) -> tuple[list[Episode], int | None]:
        """Episodes in creation order after the cursor `after` (a creation number), and the next cursor or None."""
        found: list[Episode] = []
        for episode_id, number in self.order.items():
            if after is not None and number <= after:
                continue
            if len(found) == limit:
                return found, self.order[found[-1].id]
            found.append(self.episodes[episode_id])
        return found, None

    def close_all(self, reason: str) -> None:
        """End every episode (the server stops). One no client joined leaves no trace: nothing happened to it, and
        its id may be created again after a restart."""
        for episode in self.episodes.values():
            episode.end(reason)


def _shown(value: object) -> str:
    """A refused name in a one-line message: repr escapes newlines and NULs; a 10 kB name is cut to its start."""
    text = repr(value)
    return text if len(text) <= 66 else f"{text[:40]}... ({len(text)} characters)"

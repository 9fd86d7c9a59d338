"""`mcp-hazard replay`: re-run a recorded episode's agent actions against the same condition and prove the new trace
equals the old one apart from volatile fields (times, durations, where it ran). A script of calls replays too."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from mcp_hazard.agents.drive import Brief
from mcp_hazard.agents.replay import ReplayAgent
from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.runner.replay_source import RecordedEpisode, ReplayScript
from mcp_hazard.runner.transports import HttpHost, Transport, open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.server.episodes import EpisodeRegistry, parse_condition
from mcp_hazard.trace.reader import Trace, first_difference, read_trace

MODERN = ("2026-07-28",)


async def replay_once(
    agent: ReplayAgent, scenario: LoadedScenario, task: str, condition: Condition, transport: Transport, mode: str,
    out: Path,
) -> Path:  # fmt: skip
    """Run `agent` in a fresh episode; returns the new trace's path."""
    host = HttpHost(EpisodeRegistry([scenario], out, transport="http")) if transport == "http" else None

    async def go() -> Path:
        async with open_episode(
            transport, scenario, task, condition, out, mode=mode, http_host=host, agent="replay"
        ) as connected:
            await agent.run(connected.client, Brief(prompt=""))
        return connected.trace_path

    if host is not None:
        async with host.running():
            return await go()
    return await go()


def replay_trace(recorded: RecordedEpisode, *, transport: Transport) -> tuple[Trace, Trace, str | None]:
    """The old trace, the new one, and their first difference (None when they match)."""
    old, started = recorded.trace, recorded.started
    condition = parse_condition(dict(started.get("condition") or {}))
    version = str(started.get("protocol_version", ""))
    mode = version if version in MODERN else "legacy"
    agent = ReplayAgent.from_trace(old.events)
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-replay-") as folder:
        new_path = anyio.run(replay_once, agent, recorded.scenario, str(started["task"]), condition, transport, mode,
                             Path(folder))  # fmt: skip
        new = read_trace(new_path)
    return old, new, first_difference(_served(old), new)


def _served(trace: Trace) -> Trace:
    """What the server recorded: without `agent_ended`, the runner's account of how the agent's run ended, which a
    replay of the agent's actions does not reproduce."""
    return Trace(trace.path, [e for e in trace.events if e.get("type") != "agent_ended"], trace.warnings)


def replay_script(script: ReplayScript, *, transport: Transport) -> int:
    """Run a YAML script of calls as an episode and print how it scored."""
    from mcp_hazard.scoring.episode_score import score_episode

    data, loaded = script.data, script.scenario
    task = str(data.get("task") or loaded.model.tasks[0].id)
    fields = {k: v for k, v in data.items() if k in ("seed", "profile", "hazards")}
    condition = parse_condition(fields)
    agent = ReplayAgent.from_script(data.get("calls", []), data.get("answer"))
    out = Path(data.get("trace_dir", "runs/replay"))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{script.path}: trace_dir {out} cannot be used as a folder: {exc.strerror or exc}") from None
    trace_path = anyio.run(replay_once, agent, loaded, task, condition, transport, "auto", out)
    score = score_episode(read_trace(trace_path), loaded.model)
    verdict = "correct" if score.correct else f"not correct ({score.episode_failure})"
    print(f"replay: {score.calls} calls, answer {score.answer!r}: {verdict}; trace {trace_path}")
    return 0 if score.correct else 1

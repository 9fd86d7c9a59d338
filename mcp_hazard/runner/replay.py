"""`mcp-hazard replay`: re-run a recorded episode's agent actions against the same condition and prove the new trace
equals the old one apart from volatile fields (times, durations, where it ran). A script of calls replays too."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import yaml

from mcp_hazard.agents.base import Brief
from mcp_hazard.agents.replay import ReplayAgent
from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.load import load_scenario
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


def _scenario_for(started: dict[str, Any], scenarios: str | None, allow_python: bool) -> LoadedScenario:
    ref = started.get("scenario") or {}
    if scenarios is not None:
        from mcp_hazard.load import load_scenarios

        found = {s.id: s for s in load_scenarios([scenarios], allow_python=allow_python)}.get(str(ref.get("id")))
        if found is None:
            raise UserError(f"--scenarios {scenarios}: no scenario {ref.get('id')!r}")
        loaded = found
    else:
        loaded = load_scenario(str(ref.get("path")), allow_python=allow_python)
    if ref.get("sha256") == loaded.sha256 and ref.get("path") and loaded.path != ref["path"]:
        from dataclasses import replace

        loaded = replace(loaded, path=str(ref["path"]))  # the same file, moved: the trace names it as it was
    if ref.get("sha256") and ref["sha256"] != loaded.sha256:
        raise UserError(
            f"{loaded.path} changed since the trace was recorded (sha256 differs): a replay would not be the same "
            "episode; restore the file or pass --scenarios with the original"
        )
    return loaded


def replay_trace(
    path: str, *, transport: Transport, scenarios: str | None, allow_python: bool
) -> tuple[Trace, Trace, str | None]:
    """The old trace, the new one, and their first difference (None when they match)."""
    old = read_trace(path)
    started = old.started
    if started is None:
        raise UserError(f"{path}: no episode_started event; nothing to replay")
    loaded = _scenario_for(started, scenarios, allow_python)
    condition = parse_condition(dict(started.get("condition") or {}))
    version = str(started.get("protocol_version", ""))
    mode = version if version in MODERN else "legacy"
    agent = ReplayAgent.from_trace(old.events)
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-replay-") as folder:
        new_path = anyio.run(replay_once, agent, loaded, str(started["task"]), condition, transport, mode, Path(folder))
        new = read_trace(new_path)
    return old, new, first_difference(_served(old), new)


def _served(trace: Trace) -> Trace:
    """What the server recorded: without `agent_ended`, the runner's account of how the agent's run ended, which a
    replay of the agent's actions does not reproduce."""
    return Trace(trace.path, [e for e in trace.events if e.get("type") != "agent_ended"], trace.warnings)


def load_script(path: str) -> dict[str, Any]:
    """A replay script: scenario, task, condition fields (seed, profile, hazards), calls and answer."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise UserError(f"{path}{where}: invalid YAML: {exc.problem or exc}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UserError(f"{path}: cannot read replay script: {str(exc).splitlines()[0]}") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("scenario"), str)
        or not isinstance(data.get("calls", []), list)
    ):
        raise UserError(f"{path}: a replay script needs 'scenario' (a path), 'task' and a list of 'calls'")
    for index, call in enumerate(data.get("calls", [])):
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            raise UserError(f"{path}: calls[{index}]: each call needs a 'tool' name and optional 'arguments'")
        if not isinstance(call.get("arguments", {}), dict):
            raise UserError(f"{path}: calls[{index}].arguments: must be a mapping of argument names to values")
    if not isinstance(data.get("trace_dir", "runs/replay"), str):
        raise UserError(f"{path}: trace_dir: must be a folder path")
    return data


def replay_script(path: str, *, transport: Transport, allow_python: bool) -> int:
    """Run a YAML script of calls as an episode and print how it scored."""
    from mcp_hazard.scoring.episode import score_episode

    script = load_script(path)
    loaded = load_scenario(str(Path(path).parent / script["scenario"]) if not Path(script["scenario"]).is_absolute()
                           and not Path(script["scenario"]).exists() else str(script["scenario"]),
                           allow_python=allow_python)  # fmt: skip
    task = str(script.get("task") or loaded.model.tasks[0].id)
    fields = {k: v for k, v in script.items() if k in ("seed", "profile", "hazards")}
    condition = parse_condition(fields)
    agent = ReplayAgent.from_script(script.get("calls", []), script.get("answer"))
    out = Path(script.get("trace_dir", "runs/replay"))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{path}: trace_dir {out} cannot be used as a folder: {exc.strerror or exc}") from None
    trace_path = anyio.run(replay_once, agent, loaded, task, condition, transport, "auto", out)
    score = score_episode(read_trace(trace_path), loaded.model)
    verdict = "correct" if score.correct else f"not correct ({score.episode_failure})"
    print(f"replay: {score.calls} calls, answer {score.answer!r}: {verdict}; trace {trace_path}")
    return 0 if score.correct else 1

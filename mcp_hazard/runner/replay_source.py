"""What a replay replays, read and checked before anything runs: a recorded trace (its `episode_started`, and the
scenario it names, unchanged since) or a YAML script of calls. Nothing here needs the SDK, so a wrong path, a damaged
trace or a changed scenario is reported before the server and the client are loaded (runner/replay_check.py runs it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_hazard.agentdojo.source_names import is_source
from mcp_hazard.errors import UserError
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.files import LoadedScenario, read_source
from mcp_hazard.scenario.yaml_source import parse_yaml
from mcp_hazard.trace.misfit import misfit
from mcp_hazard.trace.reader import Trace, read_trace


@dataclass(frozen=True)
class RecordedEpisode:
    """A trace to replay: its events, its `episode_started`, and the scenario it was recorded with."""

    trace: Trace
    started: dict[str, Any]
    scenario: LoadedScenario


@dataclass(frozen=True)
class ReplayScript:
    """A script of calls (`load_script`) and the scenario it names."""

    path: str
    data: dict[str, Any]
    scenario: LoadedScenario


def read_recorded(path: str, *, scenarios: str | None, allow_python: bool) -> RecordedEpisode:
    """The trace and the scenario it was recorded with (from `--scenarios` when given), which must not have changed:
    a replay against another file would not be the same episode."""
    trace = read_trace(path)
    started = trace.started
    if started is None:
        raise UserError(f"{path}: no episode_started event; nothing to replay")
    problem = misfit(path) or _unsendable(trace)  # a stranger's trace: every event replayed must fit the format
    if problem is not None:
        raise UserError(f"{problem}; nothing replayed")
    return RecordedEpisode(trace, started, _scenario_for(started, scenarios, allow_python))


def _unsendable(trace: Trace) -> str | None:
    """A recorded call whose arguments no client could have sent (the SDK sends an object or nothing, and the server
    takes a frame MAX_FRAME_DEPTH deep at most), so it cannot be sent again: the trace was changed after it was
    written."""
    from mcp_hazard.server.frames import MAX_FRAME_DEPTH, too_deep  # with the SDK: after the file is read

    for event in trace.events:
        arguments = event.get("arguments")
        if event.get("type") not in ("tool_called", "call_refused"):
            continue
        where = f"{trace.path}: {event['type']} (seq {event.get('seq')}): arguments"
        if not isinstance(arguments, dict | None):
            return f"{where}: an object or nothing, got {type(arguments).__name__}"
        if too_deep({"params": {"arguments": arguments}}):  # as deep as they sit in the request's frame
            return f"{where}: nested deeper than the {MAX_FRAME_DEPTH} levels a request may hold"
    return None


def read_script(path: str, *, allow_python: bool) -> ReplayScript:
    """The script, and its scenario: a relative path is the script's folder's unless it exists as given."""
    data = load_script(path)
    named = Path(data["scenario"])
    where = named if named.is_absolute() or named.exists() else Path(path).parent / named
    return ReplayScript(path, data, load_scenario(str(where), allow_python=allow_python))


def _scenario_for(started: dict[str, Any], scenarios: str | None, allow_python: bool) -> LoadedScenario:
    ref = started.get("scenario") or {}
    if scenarios is not None:
        from mcp_hazard.agentdojo.sources import load_sources

        found = {s.id: s for s in load_sources([scenarios], allow_python=allow_python)}.get(str(ref.get("id")))
        if found is None:
            raise UserError(f"--scenarios {scenarios}: no scenario {ref.get('id')!r}")
        loaded = found
    elif is_source(ref.get("path")):  # an AgentDojo suite, built again from the installed AgentDojo
        from mcp_hazard.agentdojo.sources import load_named

        loaded = load_named([str(ref["path"])])[0]
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


def load_script(path: str) -> dict[str, Any]:
    """A replay script: scenario, task, condition fields (seed, profile, hazards), calls and answer. Read like a
    scenario file (read_source, parse_yaml): a stranger's script gets the same size, alias and scalar limits."""
    _raw, text = read_source(path)
    data, _positions = parse_yaml(text, path)
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

"""Find traces, find the scenario each one ran, and score them all; damage becomes a warning, never a stop.

A trace is a `.jsonl` file whose first line is an `episode_started` event, so a run folder can be scored whole: its
`run.jsonl` log and any other JSONL are passed over without a word. A `.jsonl` whose first line is not JSON may be a
damaged trace, so it gets a warning.

A trace names its scenario by path and SHA-256. The path may be relative to where the run was started, and the file
may have moved or changed since, so the scorer looks in this order (the first hit wins):

1. the recorded path, if the file there has the recorded SHA-256: as recorded (absolute), else relative to the
   trace's folder or any folder above it, else to the working directory;
2. any `*.yaml`/`*.yml` file (or AgentDojo suite snapshot) with the recorded SHA-256 in a `--scenarios` folder, or
   in a `scenarios/` folder next to the trace or above it (`mcp-hazard run` keeps a copy of each scenario in
   `RUNDIR/scenarios/`);
3. a file in `--scenarios` with the recorded scenario id, and then the recorded path itself, even though the
   SHA-256 differs: the task may be unchanged, so it is scored, with a warning on each such score;
4. for an AgentDojo suite (a recorded path `agentdojo:SUITE@VERSION`, kept as a `.json` snapshot where step 2 looks),
   the suite built again from the installed AgentDojo, with the same warning when its hash differs.

A scenario found nowhere is one warning (not one per trace), and its traces are listed as unscorable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mcp_hazard.agentdojo.suite_scenario import is_suite
from mcp_hazard.errors import ScenarioError, UserError
from mcp_hazard.proxy.config import LoadedProxyFile
from mcp_hazard.proxy.environment import scenario_from_trace
from mcp_hazard.regular_file import what_is
from mcp_hazard.scenario.models import AnswerSpec, Scenario
from mcp_hazard.scenario.suite_id import scenario_hash
from mcp_hazard.scoring.collector import collector_paused
from mcp_hazard.scoring.episode_score import EpisodeScore, score_episode
from mcp_hazard.scoring.finder import ScenarioFinder
from mcp_hazard.scoring.rules import STATE_RULE
from mcp_hazard.scoring.run_log import RunNotes
from mcp_hazard.scoring.run_plan import plans_beside
from mcp_hazard.scoring.sniff import read_text, sniff, sniff_text
from mcp_hazard.scoring.timeline import timeline
from mcp_hazard.scoring.trace_listing import jsonl_under
from mcp_hazard.trace.misfit import misfit
from mcp_hazard.trace.reader import Trace, parse_trace, read_trace


@dataclass
class Scored:
    scores: list[EpisodeScore] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Traces that were recognised but could not be scored: {trace, episode_id, agent, scenario, task, reason}.
    unscorable: list[dict[str, str]] = field(default_factory=list)
    traces: int = 0  # files recognised as traces
    # The scenario each scored trace ran, by id (the last one found, when one id was found in several files).
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    # With `timelines=True`: each scored trace's readable timeline (scoring.timeline), by trace path.
    timelines: dict[str, list[list[Any]]] = field(default_factory=dict)
    # What the runs that made these traces planned for each task (scoring/run_plan.py); empty without a plan.
    plan: list[dict[str, Any]] = field(default_factory=list)
    # Each scored trace's (scenario id, scenario content hash, task id), by trace path: the suite it measured
    # (scenario/suite_id.py), right even when one scenario id was read in two versions.
    suite_parts: dict[str, tuple[str, str, str]] = field(default_factory=dict)


def trace_files(paths: list[str]) -> list[str]:
    """Every `.jsonl` file under `paths` (directories searched recursively, sorted), whether a trace or not; a user
    error when there is none."""
    files = jsonl_files(paths)
    if not files:
        raise UserError(f"no trace files (*.jsonl) in {', '.join(paths)}")
    return files


def jsonl_files(paths: list[str]) -> list[str]:
    """`trace_files` that may come back empty: a path that does not exist is still a user error."""
    return list(resolved_jsonl_files(paths))


def resolved_jsonl_files(paths: list[str]) -> dict[str, str]:
    """`jsonl_files`, each with its resolved path (what tells two names of one file apart; the scorer looks for
    scenarios and run logs beside it): trace_listing.py lists a folder, a file named is resolved on its own."""
    found: list[tuple[str, str]] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            found.extend(jsonl_under(item))
        elif path.is_file():
            found.append((str(path), os.path.realpath(path)))
        else:
            if not path.exists():
                raise UserError(f"{item}: no such file or directory")
            raise UserError(f"{item}: {what_is(path)}, not a trace file or a folder of them")
    unique: dict[str, str] = {}
    seen: set[str] = set()
    for file, key in found:  # a file named and also inside a named folder is read once
        if key not in seen:
            seen.add(key)
            unique[file] = key
    return unique


def score_traces(
    paths: list[str], *, scenarios: str | list[str] | None = None, allow_python: bool = False, timelines: bool = False
) -> Scored:
    # The cyclic garbage collector is off for the run (collector.py: the scores hold no cycles, and collections
    # that traverse them again and again cost about 3 s at 100,000 episodes).
    folders = [scenarios] if isinstance(scenarios, str) else list(scenarios or [])
    with collector_paused():
        return _score_traces(paths, folders=folders, allow_python=allow_python, timelines=timelines)


def _timestamp(event: dict[str, Any]) -> datetime | None:
    value = event.get("ts")
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def duration_s(events: list[dict[str, Any]]) -> float | None:
    """Seconds from the first event's timestamp to the last one's (None without two readable timestamps)."""
    if len(events) < 2:
        return None
    first, last = _timestamp(events[0]), _timestamp(events[-1])
    if first is None or last is None:
        return None
    try:
        return round((last - first).total_seconds(), 3)
    except TypeError:  # one timestamp with a time zone, one without
        return None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _unscorable(file: str, started: dict[str, Any], reason: str) -> dict[str, str]:
    run, ref = _mapping(started.get("run")), _mapping(started.get("scenario"))
    return {
        "trace": file, "episode_id": str(run.get("episode_id") or ""), "agent": str(run.get("agent") or ""),
        "scenario": str(ref.get("id") or ""), "task": str(started.get("task") or ""), "reason": reason,
    }  # fmt: skip


def match_text(spec: AnswerSpec | None) -> str:
    """The task's matching rule as a person reads it: `numeric ± 0.01`, `case_insensitive`; "" without an answer."""
    if spec is None:
        return ""
    return f"{spec.match} ± {spec.tolerance:g}" if spec.match == "numeric" and spec.tolerance else spec.match


def _for_reports(score: EpisodeScore, scenario: Scenario, notes: RunNotes, folder: Path) -> None:
    """What the reports show beside the verdict: the expected answer, its rule, and the agent's notes."""
    key = (id(scenario), score.task)
    kept = _EXPECTED.get(key)
    if kept is None or kept[0] is not scenario:
        task = scenario.task(score.task)
        spec = task.answer if task is not None else None
        expected, match = (spec.value if spec is not None else None), match_text(spec)
        if is_suite(scenario) and task is not None:  # judged by AgentDojo's check; the golden answer for reference
            expected, match = task.golden_path.answer, STATE_RULE
        if len(_EXPECTED) >= 4096:
            _EXPECTED.clear()
        kept = _EXPECTED[key] = (scenario, expected, match)
    score.expected, score.match = kept[1], kept[2]  # shared by the task's scores: the reports only read them
    score.notes = notes.of(folder, score.episode_id)


# (scenario id(), task id) -> (the scenario, expected answer, its rule): once per task, not per episode. Each entry
# keeps its scenario alive, so the id cannot be reused while it lives; dropped whole when full.
_EXPECTED: dict[tuple[int, str], tuple[Scenario, Any, str]] = {}


def _score_traces(paths: list[str], *, folders: list[str], allow_python: bool, timelines: bool) -> Scored:
    finder = ScenarioFinder(folders, allow_python)
    notes = RunNotes()
    folders_scored: list[Path] = []
    scored = Scored()
    named = {str(Path(p)) for p in paths}
    # A scenario that cannot be had: one warning, at the place of its first trace, counting all of them.
    missing: dict[str, tuple[int, int]] = {}  # reason -> (index in warnings, traces)
    places: dict[str, Path] = {}
    for file, resolved in resolved_jsonl_files(paths).items():
        read = _read(file, file in named, scored)
        if read is None:
            continue
        trace, started = read
        parent = os.path.dirname(resolved)
        where = places.get(parent)
        if where is None:  # one Path per folder: it keys the finder's and the run notes' caches, hashed once
            where = places[parent] = Path(parent)
        loaded, note = _scenario_of(file, started, finder, where)
        if loaded is None:
            index, count = missing.get(note, (len(scored.warnings), 0))
            if count == 0:
                scored.warnings.append(note)
            missing[note] = (index, count + 1)
            scored.unscorable.append(_unscorable(file, started, note))
            continue
        try:
            score = score_episode(trace, loaded.model)
        except Exception as exc:  # a field of the wrong shape: say which, and score the others
            why = misfit(file)
            said = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"  # ValueError: ours
            said = said.removeprefix(f"{trace.path}: ")  # ours name the trace, as this line does
            why = f"{why}; trace not scored" if why else f"{file}: cannot score: {said}"
            scored.warnings.append(why)
            scored.unscorable.append(_unscorable(file, started, why))
            continue
        _keep(scored, score, trace, loaded, note, notes, where, timelines)
        folders_scored.append(where)
    for note, (index, count) in missing.items():
        scored.warnings[index] = f"{note}; {count} trace{'' if count == 1 else 's'} not scored"
    scored.plan = plans_beside(folders_scored)
    return scored


def _read(file: str, named: bool, scored: Scored) -> tuple[Trace, dict[str, Any]] | None:
    """The trace in `file` and its `episode_started` event; None (with a warning where one is due) when the file is
    not a trace, or a trace that cannot be read."""
    text = read_text(file)
    whole = _whole_trace(text, file) if text is not None else None
    if whole is not None:
        scored.traces += 1
        return whole, whole.events[0]
    first, problem = sniff(file) if text is None else sniff_text(text, file)
    if first is None:
        if problem is not None:
            scored.warnings.append(problem)
        elif named:  # named on purpose, so say why nothing came of it
            scored.warnings.append(f"{file}: not a trace (its first line is not an episode_started event); skipped")
        return None
    scored.traces += 1
    try:
        trace = read_trace(file) if text is None else parse_trace(text, file)
    except UserError as exc:
        scored.warnings.append(str(exc) + "; trace not scored")
        scored.unscorable.append(_unscorable(file, first, str(exc)))
        return None
    scored.warnings.extend(trace.warnings)
    return trace, trace.started or first


def _whole_trace(text: str, file: str) -> Trace | None:
    """The trace in `text` when it is a whole one: its first line an `episode_started` event and every line read
    without a warning. Then that first line, parsed once, is what `sniff_text` would have found; anything else
    (None) goes the careful way, sniffing first, which says what is wrong where."""
    end = text.find("\n")
    if '"episode_started"' not in (text if end < 0 else text[:end]):
        return None
    try:
        trace = parse_trace(text, file)
    except UserError:
        return None
    if trace.warnings or not trace.events or trace.events[0].get("type") != "episode_started":
        return None
    return trace


def _scenario_of(file: str, started: dict[str, Any], finder: ScenarioFinder, where: Path) -> tuple[Any, str]:
    """(the scenario the trace ran, a note about how it was found) or (None, why not): a file found by the finder,
    and for a proxy's trace the scenario its trace holds (with the proxy file, when it had one)."""
    ref = _mapping(started.get("scenario"))
    proxied = isinstance(started.get("upstream"), dict)
    loaded: Any
    if proxied and not ref.get("sha256"):
        loaded, note = None, ""  # a proxy with no file: the trace holds all there is
    else:
        loaded, note = finder.find(str(ref.get("id")), str(ref.get("path") or ""), str(ref.get("sha256") or ""),
                                   where)  # fmt: skip
        if loaded is not None and proxied != isinstance(loaded, LoadedProxyFile):
            loaded, note = None, f"{file}: the file found for {ref.get('id')!r} is not the kind this trace ran"
    if proxied and (loaded is not None or not ref.get("sha256")):
        try:
            loaded = scenario_from_trace(started, loaded)
        except ScenarioError as exc:
            loaded, note = None, f"{file}: {exc}"
    return loaded, note


def _keep(
    scored: Scored, score: EpisodeScore, trace: Trace, loaded: Any, note: str, notes: RunNotes, where: Path,
    timelines: bool,
) -> None:  # fmt: skip
    """Add a score to `scored`, with what the reports show beside it and the warnings not already given."""
    score.duration_s = duration_s(trace.events)
    _for_reports(score, loaded.model, notes, where)
    scored.scenarios[loaded.id] = loaded.model
    scored.suite_parts[score.trace] = (loaded.id, scenario_hash(loaded.model), score.task)
    if timelines:
        scored.timelines[score.trace] = timeline(trace.events)
    if note:
        score.warnings.append(f"{trace.path}: {note}")
    if score.warnings:
        scored.warnings.extend(w for w in score.warnings if w not in trace.warnings)
    scored.scores.append(score)

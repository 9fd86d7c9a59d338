"""Find traces, find the scenario each one ran, and score them all; damage becomes a warning, never a stop.

A trace names its scenario by path and content hash. `--scenarios DIR` points at another folder, matched by scenario
id. A scenario file whose hash differs from the trace's is still used (the task may be unchanged) but every score
from it carries a warning saying so, and the report lists it.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path

from mcp_hazard.errors import ScenarioError, UserError
from mcp_hazard.scenario.load import LoadedScenario, load_scenario, scenario_files
from mcp_hazard.scoring.episode import EpisodeScore, score_episode
from mcp_hazard.trace.reader import read_trace


@dataclass
class Scored:
    scores: list[EpisodeScore] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def trace_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            files.extend(sorted(path.rglob("*.jsonl")))
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{item}: no such file or directory")
    if not files:
        raise UserError(f"no trace files (*.jsonl) in {', '.join(paths)}")
    return files


class ScenarioCache:
    """Scenarios by path (as the trace recorded it) or by id from an override folder; each loaded once."""

    def __init__(self, override: str | None, allow_python: bool = False) -> None:
        self.allow_python = allow_python
        self.by_path: dict[str, LoadedScenario | str] = {}
        self.by_id: dict[str, LoadedScenario] = {}
        if override is not None:
            for file in scenario_files([override]):
                try:
                    loaded = load_scenario(file, allow_python=allow_python)
                except ScenarioError as exc:
                    raise UserError(f"--scenarios: {exc.problems[0]}") from None
                self.by_id[loaded.id] = loaded

    def get(self, scenario_id: str, path: str) -> LoadedScenario | str:
        """The scenario, or a one-line reason it cannot be had."""
        if self.by_id:
            found = self.by_id.get(scenario_id)
            return found if found is not None else f"scenario {scenario_id!r} is not in --scenarios"
        if path not in self.by_path:
            try:
                self.by_path[path] = load_scenario(path, allow_python=self.allow_python)
            except ScenarioError as exc:
                self.by_path[path] = f"scenario file {path} cannot be used: {exc.problems[0]}"
        return self.by_path[path]


def score_traces(paths: list[str], *, scenarios: str | None = None, allow_python: bool = False) -> Scored:
    # The cyclic garbage collector is off for the run. With it on, every score kept alive is traversed again and
    # again by ever larger collections (about 3 s at 100,000 episodes), although traces and scores hold no reference
    # cycles. Afterwards (if it was on) the objects made during the run go to the oldest generation, where a
    # collection would have put these long-lived objects, without a traversal: see _promote.
    collecting = gc.isenabled()
    if collecting:
        gc.collect()  # while the heap is small; it also restarts the count that triggers full collections
    gc.disable()
    try:
        return _score_traces(paths, scenarios=scenarios, allow_python=allow_python)
    finally:
        if collecting:
            _promote()
            gc.enable()


def _promote() -> None:
    """Move every object the collector tracks to its oldest generation. `gc.freeze()` then `gc.unfreeze()` does that
    without visiting them (both only relink lists); the next full collection examines them, as it would have anyway,
    and frees any cycles among them. Unfreezing would also release objects that someone else froze, so then nothing
    is moved and the collector simply resumes."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _score_traces(paths: list[str], *, scenarios: str | None, allow_python: bool) -> Scored:
    cache = ScenarioCache(scenarios, allow_python)
    scored = Scored()
    for file in trace_files(paths):
        try:
            trace = read_trace(file)
        except UserError as exc:
            scored.warnings.append(str(exc) + "; trace not scored")
            continue
        scored.warnings.extend(trace.warnings)
        started = trace.started
        if started is None:
            scored.warnings.append(f"{file}: no episode_started event; trace not scored")
            continue
        ref = started.get("scenario") or {}
        loaded = cache.get(str(ref.get("id")), str(ref.get("path")))
        if isinstance(loaded, str):
            scored.warnings.append(f"{file}: {loaded}; trace not scored")
            continue
        try:
            score = score_episode(trace, loaded.model)
        except (ValueError, KeyError, TypeError) as exc:
            scored.warnings.append(f"{file}: cannot score: {exc}")
            continue
        if ref.get("sha256") and ref["sha256"] != loaded.sha256:
            score.warnings.append(
                f"{file}: scenario {loaded.path} changed since this trace was recorded (sha256 differs)"
            )
        if score.warnings:
            scored.warnings.extend(w for w in score.warnings if w not in trace.warnings)
        scored.scores.append(score)
    return scored

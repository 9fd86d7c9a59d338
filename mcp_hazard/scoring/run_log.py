"""The agent's notes for the report, read from the run log (`run.jsonl`) that `mcp-hazard run` writes beside its
`traces/` folder: one record per episode with its status and what the built-in agent noted on the way ("origin:
find_city_code failed: ..."). The trace does not hold them (they are the agent's account, not the server's), so a
person reading an episode in the report would otherwise never see them.

The log is looked for in the trace's folder and the one above it (RUN/traces/x.jsonl -> RUN/run.jsonl), so `score
RUN` and `score RUN/traces` find the same notes. A resumed run appends a `skipped` record for each episode finished
earlier: it never replaces the notes of the run that played it. A line that is not a record is passed over: the log
is the runner's, and damage there must not cost a score.
"""

from __future__ import annotations

from pathlib import Path

from mcp_hazard.trace.jsonl import json_records

RUN_LOG = "run.jsonl"


def _read(path: Path) -> dict[str, list[str]]:
    """episode_id -> notes of its last record that played it (status other than `skipped`)."""
    notes: dict[str, list[str]] = {}
    for record in json_records(path):
        if record.get("status") == "skipped":
            continue
        episode, listed = record.get("episode_id"), record.get("notes")
        if isinstance(episode, str) and isinstance(listed, list):
            notes[episode] = [str(note) for note in listed]
    return notes


class RunNotes:
    """The notes of each episode, by trace file; each run log read once."""

    def __init__(self) -> None:
        self._logs: dict[Path, dict[str, list[str]] | None] = {}
        self._beside: dict[Path, list[dict[str, list[str]]]] = {}  # folder -> the logs of it and its parent

    def _log(self, folder: Path) -> dict[str, list[str]] | None:
        if folder not in self._logs:
            path = folder / RUN_LOG
            self._logs[folder] = _read(path) if path.is_file() else None
        return self._logs[folder]

    def of(self, folder: Path, episode_id: str) -> list[str] | None:
        """The agent's notes for the episode (maybe none), or None when no run log beside the trace (in `folder`, its
        resolved folder) records it."""
        logs = self._beside.get(folder)
        if logs is None:  # once per folder: a run folder's thousands of traces share one or two
            found = (self._log(place) for place in (folder, folder.parent))
            logs = self._beside[folder] = [log for log in found if log is not None]
        for log in logs:
            if episode_id in log:
                return log[episode_id]
        return None

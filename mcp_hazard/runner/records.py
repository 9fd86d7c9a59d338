"""What a run keeps in its folder, and reads back: the run log's lines, the `agent_ended` that ends each trace, and
what a rerun needs to know which episodes are done.

Every line goes in whole or not at all (trace/storage.py): a run stopped by a full disk leaves a run log and traces
whose every line is JSON, so the same command run again resumes from them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

import anyio

from mcp_hazard.agents.drive import AgentReport
from mcp_hazard.runner.matrix import Cell
from mcp_hazard.runner.transports import episode_maker
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.trace.events import AgentEnded, AgentOutcome, EndReason
from mcp_hazard.trace.jsonl import json_records
from mcp_hazard.trace.storage import append_whole, write_whole
from mcp_hazard.trace.writer import append_event, utc_now

if TYPE_CHECKING:
    from mcp_hazard.proxy.service import ProxyService

Status = Literal["done", "skipped", "timeout", "crashed", "endpoint_error", "server_crashed"]
STATUS_OF: dict[AgentOutcome, Status] = {
    "finished": "done", "agent_crashed": "crashed", "endpoint_error": "endpoint_error", "timeout": "timeout",
    "server_crashed": "server_crashed",
}  # fmt: skip
RETRIED: tuple[AgentOutcome, ...] = ("endpoint_error", "server_crashed")
"""Outcomes a rerun runs again: the agent never had its full turn (its model endpoint failed, its server died)."""
MAX_NOTES = 60
MAX_NOTE_CHARS = 600
ENDED_WAIT_S = 5.0  # how long a stdio server may take to record its end after its client is gone


@dataclass
class CellResult:
    cell: Cell
    status: Status
    note: str = ""
    notes: list[str] = field(default_factory=list)


def trace_complete(path: Path) -> bool:
    """A trace the runner finished (`agent_ended`), so a rerun skips it; except when the agent never had its turn:
    its model endpoint failed, its server died, or it never connected."""
    events = json_records(path)
    ended = [e for e in events if e.get("type") == "agent_ended"]
    if not ended or ended[-1].get("outcome") in RETRIED:
        return False
    return not any(e.get("type") == "episode_ended" and e.get("reason") == "never_connected" for e in events)


def never_connected(path: Path) -> bool:
    return any(e.get("type") == "episode_ended" and e.get("reason") == "never_connected" for e in json_records(path))


def server_gone(path: Path, agent_finished: bool) -> str | None:
    """Why a stdio server's episode ended on the server's side, or None. A server that ends well records the
    episode's end before it exits (its client closes stdin first), so once the client is closed and the process
    gone: no end at all means it was killed or crashed; `server_stopped` means a signal stopped it, which is news
    only while the agent was still at work (the client's own shutdown may stop a server slow to leave)."""
    events = json_records(path)
    if not any(e.get("type") == "episode_started" for e in events):  # a built-in agent connects first thing
        return None if agent_finished else "the stdio server exited before it served a request"
    ended = [e for e in events if e.get("type") == "episode_ended"]
    if not ended:
        return "the stdio server exited mid-episode without recording its end (killed or crashed)"
    if ended[-1].get("reason") == "server_stopped" and not agent_finished:
        return "the stdio server was stopped by a signal mid-episode"
    return None


def bounded_notes(notes: list[str]) -> list[str]:
    """The agent's notes for the run log: each cut to MAX_NOTE_CHARS, at most MAX_NOTES of them."""
    kept = [n if len(n) <= MAX_NOTE_CHARS else n[: MAX_NOTE_CHARS - 1] + "…" for n in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        kept.append(f"({len(notes) - MAX_NOTES} more notes left out)")
    return kept


def log_result(out: Path, result: CellResult, log: IO[bytes] | None = None) -> None:
    """One line of the run log (`run.jsonl`) for a finished or skipped episode, whole or not at all (a
    `StorageError`); `log`: the run log kept open, unbuffered."""
    record = {
        "ts": utc_now(), "episode_id": result.cell.episode_id, "agent": result.cell.agent,
        "status": result.status, "note": result.note, "notes": result.notes,
    }  # fmt: skip
    # An agent's note may hold a lone surrogate (a program's output): its JSON escape keeps the line valid (writer.py)
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
    if log is not None:
        write_whole(log, line)
    else:
        append_whole(out / "run.jsonl", line)


def empty_trace(
    cell: Cell, traces: Path, transport: str, reason: EndReason, episode_id: str | None = None,
    proxy: ProxyService | None = None,
) -> None:  # fmt: skip
    """A trace for an episode whose server never recorded one (or whose record was lost): started and ended with
    no agent action, so the report still counts the episode. Its caller appends `agent_ended` next."""
    registry = EpisodeRegistry([cell.scenario], traces, transport=transport, report_trace_failures=False,
                               runner=True, **episode_maker(proxy))  # fmt: skip
    episode = registry.create(cell.scenario.id, cell.task, cell.condition, episode_id or cell.episode_id, cell.agent)
    episode.start("none")
    episode.end(reason)
    if episode.trace.failure is not None:
        raise episode.trace.failure


async def finish_trace(
    path: Path, outcome: AgentOutcome, detail: str, report: AgentReport, *, label: str | None = None,
    repeat: int | None = None, wait: bool = True,
) -> None:  # fmt: skip
    """Append `agent_ended` once the server has recorded the episode's end (a stdio server in another process may
    need a moment after its client left; `wait=False` when it is known to be gone); `label` and `repeat`: the
    agent's group and the attempt (`run --agent-label`, `--repeats`)."""
    if wait:
        with anyio.move_on_after(ENDED_WAIT_S):
            while not any(e.get("type") == "episode_ended" for e in json_records(path)):
                await anyio.sleep(0.02)
    append_event(path, AgentEnded, outcome=outcome, detail=detail, events=report.events, label=label, repeat=repeat)

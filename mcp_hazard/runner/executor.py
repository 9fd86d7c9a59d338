"""What the two ways of playing a matrix share (the local runner, run.py, and the Ray executor, ray_executor.py):
where the run's files go, how each episode is played, and the results as they come in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NotRequired, TypedDict, Unpack

from mcp_hazard.runner.matrix import Cell
from mcp_hazard.runner.records import CellResult
from mcp_hazard.runner.transports import Transport


class Played(TypedDict):
    """How each episode is played, as both executors take it."""

    transport: Transport
    concurrency: int
    timeout_s: float
    call_timeout_s: float
    agent_cmds: NotRequired[dict[str, str] | None]
    show_progress: NotRequired[bool]


class Executor:
    def __init__(self, out: Path, **played: Unpack[Played]) -> None:
        self.out = out
        self.traces = out / "traces"
        self.transport = played["transport"]
        self.concurrency = played["concurrency"]
        self.timeout_s = played["timeout_s"]
        self.call_timeout_s = played["call_timeout_s"]
        self.agent_cmds = dict(played.get("agent_cmds") or {})
        self.show_progress = played.get("show_progress", True)
        self.results: list[CellResult] = []
        self._advance: Callable[[], None] = lambda: None  # moves the progress bar on by one episode

    def _trace(self, cell: Cell) -> Path:
        return self.traces / f"{cell.episode_id}.jsonl"

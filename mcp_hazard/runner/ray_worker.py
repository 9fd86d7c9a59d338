"""What a Ray worker runs for `mcp-hazard run --executor ray`: one episode, start to end, handed back as data.

The worker runs the episode with the same `Runner` code as `--executor local` (server and agent in the worker, in
memory or over loopback HTTP), in a folder of its own, and returns the trace's text, the runner's result and the
agent program's output. Nothing is written where the driver could see it: the driver writes the run folder, so
workers need no shared filesystem. This module imports no Ray: Ray calls it by reference on the worker.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from mcp_hazard.runner.matrix import Cell
from mcp_hazard.runner.records import Status
from mcp_hazard.runner.run import Runner
from mcp_hazard.runner.transports import Transport
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.hazard_spec import HazardSpec

WORK_PREFIX = "mcp-hazard-ray-"


@dataclass(frozen=True)
class CellFields:
    """A cell without its scenario: the scenario goes to the cluster once (an object reference), not per episode."""

    agent: str
    task: str
    label: str
    hazards: tuple[HazardSpec, ...]
    profile: str
    seed: int
    interventions: tuple[str, ...]

    @classmethod
    def of(cls, cell: Cell) -> CellFields:
        return cls(cell.agent, cell.task, cell.label, cell.hazards, cell.profile, cell.seed, cell.interventions)

    def cell(self, scenario: LoadedScenario) -> Cell:
        return Cell(
            self.agent, scenario, self.task, self.label, self.hazards, self.profile, self.seed, self.interventions
        )


@dataclass(frozen=True)
class WorkerSettings:
    """The `run` options an episode needs on the worker, the same for every episode of the run."""

    transport: Transport
    timeout_s: float
    call_timeout_s: float
    agent_cmds: dict[str, str] = field(default_factory=dict)


@dataclass
class Shipped:
    """One finished episode as it travels back to the driver. `work_dir` is the worker's folder for the episode,
    which the driver replaces by the run folder in the lines meant for people."""

    episode_id: str
    status: Status
    note: str
    notes: list[str]
    trace: str
    agent_log: bytes | None
    work_dir: str
    worker: str


def run_episode(scenario: LoadedScenario, fields: CellFields, settings: WorkerSettings) -> Shipped:
    """Run one episode on this worker and return everything the driver writes. The episode's folder is removed
    afterwards whatever happens, so a long-lived worker does not fill its disk."""
    cell = fields.cell(scenario)
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
    try:
        runner = Runner(
            work, transport=settings.transport, concurrency=1, timeout_s=settings.timeout_s,
            call_timeout_s=settings.call_timeout_s, agent_cmds=dict(settings.agent_cmds), show_progress=False,
        )  # fmt: skip
        result = anyio.run(runner.run_one, cell)
        trace = (work / "traces" / f"{cell.episode_id}.jsonl").read_text(encoding="utf-8")
        log = work / "agent-logs" / f"{cell.episode_id}.log"
        return Shipped(
            cell.episode_id, result.status, result.note, result.notes, trace,
            log.read_bytes() if log.exists() else None, str(work), f"{socket.gethostname()}:{os.getpid()}",
        )  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)

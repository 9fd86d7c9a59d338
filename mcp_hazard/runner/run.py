"""Run a matrix of episodes concurrently over a real transport, resumably, with a per-episode time limit.

A cell whose trace already ended is skipped; a cell whose trace was cut short is run again from scratch. A hung agent
is stopped when its time is up and a crashing one is caught: both leave a trace the scorer reads (no answer), and
the run's own log (`run.jsonl`) says which cells timed out or crashed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.base import Brief, signatures_of
from mcp_hazard.runner.external import http_env, run_external, stdio_env
from mcp_hazard.runner.matrix import Cell
from mcp_hazard.runner.transports import HttpHost, Transport, open_episode, serve_command
from mcp_hazard.server.episode import SUBMIT_TOOL
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.trace.writer import utc_now

Status = Literal["done", "skipped", "timeout", "crashed"]


@dataclass
class CellResult:
    cell: Cell
    status: Status
    note: str = ""


def trace_complete(path: Path) -> bool:
    """A trace that reached episode_ended (and so is not redone on resume)."""
    if not path.exists():
        return False
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("type") == "episode_ended":
            return event.get("reason") != "never_connected"  # an agent that never came is tried again
    return False


def served_prompt(cell: Cell) -> str:
    task = cell.scenario.model.task(cell.task)
    assert task is not None
    return f"{task.prompt.strip()}\n\nWhen you have the answer, call the `{SUBMIT_TOOL}` tool with it."


def _one_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


class Runner:
    def __init__(
        self,
        out: Path,
        *,
        transport: Transport,
        concurrency: int,
        timeout_s: float,
        call_timeout_s: float,
        agent_cmds: dict[str, str] | None = None,
        show_progress: bool = True,
    ) -> None:
        self.out = out
        self.traces = out / "traces"
        self.transport = transport
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.call_timeout_s = call_timeout_s
        self.agent_cmds = agent_cmds or {}
        self.show_progress = show_progress
        self.host: HttpHost | None = None
        self.results: list[CellResult] = []

    async def run(self, cells: list[Cell]) -> list[CellResult]:
        self.traces.mkdir(parents=True, exist_ok=True)
        if self.transport == "http":
            scenarios = list({id(c.scenario): c.scenario for c in cells}.values())
            self.host = HttpHost(EpisodeRegistry(scenarios, self.traces, transport="http"))
            async with self.host.running():
                await self._all(cells)
        else:
            await self._all(cells)
        return self.results

    async def _all(self, cells: list[Cell]) -> None:
        limiter = anyio.CapacityLimiter(self.concurrency)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        console = Console(stderr=True)
        with Progress(*columns, console=console, disable=not self.show_progress, transient=False) as progress:
            bar = progress.add_task(f"episodes ({self.transport})", total=len(cells))

            async def one(cell: Cell) -> None:
                async with limiter:
                    result = await self._cell(cell)
                self.results.append(result)
                self._log(result)
                progress.advance(bar)

            async with anyio.create_task_group() as group:
                for cell in cells:
                    group.start_soon(one, cell)

    def _log(self, result: CellResult) -> None:
        record = {"ts": utc_now(), "episode_id": result.cell.episode_id, "status": result.status, "note": result.note}
        with (self.out / "run.jsonl").open("a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")

    async def _cell(self, cell: Cell) -> CellResult:
        path = self.traces / f"{cell.episode_id}.jsonl"
        if trace_complete(path):
            return CellResult(cell, "skipped", "finished in an earlier run")
        path.unlink(missing_ok=True)
        try:
            with anyio.move_on_after(self.timeout_s) as scope:
                if cell.agent in self.agent_cmds:
                    return await self._external(cell)
                await self._internal(cell)
            if scope.cancelled_caught:
                self._ensure_trace(cell)
                return CellResult(cell, "timeout", f"stopped after {self.timeout_s:g}s")
        except Exception as exc:  # a crashing agent is recorded, never the end of the run
            self._ensure_trace(cell)
            return CellResult(cell, "crashed", _one_line(exc))
        return CellResult(cell, "done")

    async def _internal(self, cell: Cell) -> None:
        task = cell.scenario.model.task(cell.task)
        assert task is not None
        agent = make_agent(cell.agent)
        brief = Brief(prompt=served_prompt(cell), plan=task.golden_path, call_timeout_s=self.call_timeout_s,
                      signatures=signatures_of(cell.scenario.model))  # fmt: skip
        async with open_episode(
            self.transport, cell.scenario, cell.task, cell.condition, self.traces, http_host=self.host,
            agent=cell.agent, episode_id=cell.episode_id,
        ) as connected:  # fmt: skip
            await agent.run(connected.client, brief)

    def _ensure_trace(self, cell: Cell) -> None:
        """An agent that never reached the server still gets a trace (no answer), so the report counts it."""
        if (self.traces / f"{cell.episode_id}.jsonl").exists():
            return
        episode = self.host.registry.get(cell.episode_id) if self.host is not None else None
        if episode is None or episode.trace.closed:
            registry = EpisodeRegistry([cell.scenario], self.traces, transport="http" if self.host else "stdio")
            episode = registry.create(cell.scenario.id, cell.task, cell.condition, cell.episode_id, cell.agent)
        episode.start("none")
        episode.end("never_connected")

    async def _external(self, cell: Cell) -> CellResult:
        command = self.agent_cmds[cell.agent]
        env = {
            "MCP_HAZARD_EPISODE_ID": cell.episode_id, "MCP_HAZARD_SCENARIO": cell.scenario.id,
            "MCP_HAZARD_TASK": cell.task, "MCP_HAZARD_SEED": str(cell.seed), "MCP_HAZARD_PROFILE": cell.profile,
            "MCP_HAZARD_TRACE": str(self.traces / f"{cell.episode_id}.jsonl"),
            "MCP_HAZARD_CALL_TIMEOUT_S": f"{self.call_timeout_s:g}",
        }  # fmt: skip
        if self.host is not None:
            created = await self.host.create_episode(
                cell.scenario.id, cell.task, cell.condition, cell.agent, cell.episode_id
            )
            env.update(http_env(created["mcp_url"]))
        else:
            server = serve_command(cell.scenario, cell.task, cell.condition, self.traces, cell.episode_id, cell.agent)
            env.update(stdio_env(server))
        log = self.out / "agent-logs" / f"{cell.episode_id}.log"
        try:
            code, timed_out = await run_external(command, env, served_prompt(cell), self.timeout_s, log)
        finally:
            if self.host is not None:
                served = self.host.registry.get(cell.episode_id)
                if served is not None:
                    served.end("disconnected")
        self._ensure_trace(cell)
        if timed_out:
            return CellResult(cell, "timeout", f"killed after {self.timeout_s:g}s")
        if code != 0:
            return CellResult(cell, "crashed", f"exit code {code} (output in {log})")
        return CellResult(cell, "done")

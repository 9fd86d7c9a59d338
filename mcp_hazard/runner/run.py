"""Run a matrix of episodes concurrently over a real transport, resumably, with a per-episode time limit.

Every episode ends with an `agent_ended` event that the runner appends to its trace: how the agent's run ended
(finished, agent_crashed, endpoint_error, timeout, or server_crashed when a stdio server died under it) and what
the agent recorded that the server never saw. A crash is an outcome, not a gap: the trace stays and the scorer
counts the episode. On a rerun, an episode whose trace has `agent_ended` is skipped, except when its model endpoint
failed, its server died or the agent never connected (none was the agent's turn): those run again, as does any
episode whose trace was cut short. The run log (`run.jsonl`) has one line per episode with its status and the
agent's notes (records.py).

A trace or run-log line that cannot be written (a full disk, a folder made read-only) stops the whole run at once
with one line: the episodes under way are dropped (their traces are cut short, so a rerun redoes them), and no line
is ever left half-written. SIGINT and SIGTERM stop it the same way, with no `agent_ended` for the episodes under way
(stopping.py), which the scorer then counts as `interrupted`.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Unpack

import anyio

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.drive import AgentReport, Brief, signatures_of
from mcp_hazard.errors import UserError
from mcp_hazard.log_tail import last_line
from mcp_hazard.runner.executor import Executor, Played
from mcp_hazard.runner.external import http_env, run_external, stdio_env
from mcp_hazard.runner.matrix import Cell
from mcp_hazard.runner.outcome import outcome_of, server_side
from mcp_hazard.runner.progress import progress_bar
from mcp_hazard.runner.records import (
    STATUS_OF,
    CellResult,
    bounded_notes,
    empty_trace,
    finish_trace,
    log_result,
    never_connected,
    trace_complete,
)
from mcp_hazard.runner.stopping import interrupted, stop_on_signals
from mcp_hazard.runner.transports import HttpHost, episode_maker, open_episode, serve_command
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.server.served_episode import SUBMIT_TOOL, Episode
from mcp_hazard.terminal_text import visible
from mcp_hazard.trace.events import AgentEnded, AgentOutcome
from mcp_hazard.trace.storage import StorageError, storage_error

if TYPE_CHECKING:
    from rich.console import Console

    from mcp_hazard.proxy.service import ProxyService


def served_prompt(cell: Cell) -> str:
    task = cell.scenario.model.task(cell.task)
    assert task is not None
    return f"{task.prompt.strip()}\n\nWhen you have the answer, call the `{SUBMIT_TOOL}` tool with it."


class Runner(Executor):
    def __init__(
        self,
        out: Path,
        *,
        proxy: ProxyService | None = None,
        labels: dict[str, str] | None = None,
        sock: socket.socket | None = None,
        **played: Unpack[Played],
    ) -> None:
        """`proxy`: the cells' scenario is a real server's tools, reached through this running ProxyService.
        `sock`: the HTTP server's listening socket (`run --port`), bound before the run."""
        super().__init__(out, **played)
        self.proxy = proxy
        self.sock = sock
        self.labels = labels or {}  # agent -> group (`--agent-label`), recorded in each agent_ended
        self.host: HttpHost | None = None
        self._run_log: IO[bytes] | None = None
        self.stopped: StorageError | None = None  # the first line the disk refused: it stops the run
        self.signal: int | None = None  # SIGINT or SIGTERM received: the run is being stopped (stopping.py)
        self.console: Console | None = None  # the progress bar's, while it shows

    def say(self, text: str) -> None:
        """One line on stderr, above the progress bar when it shows."""
        text = visible(text, one_line=True)
        if self.console is not None and self.show_progress:
            self.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)

    async def run(self, cells: list[Cell]) -> list[CellResult]:
        """Run the cells; SIGINT or SIGTERM stops the run (`Interrupted`): the episodes under way are cancelled and
        get no `agent_ended`, so the scorer calls them interrupted and the same command runs them again."""
        try:
            self.traces.mkdir(parents=True, exist_ok=True)
            with stop_on_signals(self) as scope:
                results = await self._run(cells)
            if scope.cancelled_caught or self.signal is not None:
                raise interrupted(self.signal, self.results, cells, self.out)
            return results
        except StorageError as exc:
            raise self._stopping(exc, len(cells)) from None
        finally:
            if self._run_log is not None:
                self._run_log.close()
                self._run_log = None

    async def _run(self, cells: list[Cell]) -> list[CellResult]:
        # A program that cannot start stops the run; the error leaves the HTTP host's block normally (raised
        # through it, the server would be torn down mid-shutdown and print a traceback).
        stopped: UserError | None = None
        with self._progress(len(cells)):
            if self.transport == "http":
                scenarios = list({id(c.scenario): c.scenario for c in cells}.values())
                registry = EpisodeRegistry(scenarios, self.traces, transport="http", report_trace_failures=False,
                                           runner=True, **episode_maker(self.proxy))  # fmt: skip
                self.host = HttpHost(registry, self.proxy, self.sock)
                async with self.host.running():
                    rest, stopped = await self._first_contact(cells)
                    if stopped is None:
                        await self._all(rest)
            else:
                rest, stopped = await self._first_contact(cells)
                if stopped is None:
                    await self._all(rest)
        if stopped is not None:
            raise stopped
        if self.stopped is not None:
            raise self.stopped
        return self.results

    def _stopping(self, failure: StorageError, total: int) -> StorageError:
        """The one line a run stopped by its disk ends with: what could not be written, how far the run got, and
        that the same command resumes."""
        finished = f"{len(self.results)} of {total} episodes finished"
        message = (f"{failure}; the run stopped with {finished} (every line written is whole): make room or fix the "
                   "folder, then run the same command again to resume")  # fmt: skip
        return StorageError(message, failure.reason)

    def _stop(self, failure: StorageError, scope: anyio.CancelScope) -> None:
        if self.stopped is None:
            self.stopped = failure
        scope.cancel()

    async def run_one(self, cell: Cell) -> CellResult:
        """One episode with a host of its own and no run log: the unit of work an executor hands to a worker
        (runner/ray_worker.py). The episode runs exactly as in `run`, so its trace is the same."""
        self.traces.mkdir(parents=True, exist_ok=True)
        if self.transport != "http":
            result = await self._cell(cell)
        else:
            registry = EpisodeRegistry([cell.scenario], self.traces, transport="http", report_trace_failures=False,
                                       runner=True)  # fmt: skip
            self.host = HttpHost(registry)
            async with self.host.running():
                result = await self._cell(cell)
        assert result is not None  # no signal handler here: a worker is stopped by its executor
        return result

    async def _first_contact(self, cells: list[Cell]) -> tuple[list[Cell], UserError | None]:
        """Run one episode of each external program alone before the others, so a program that cannot start (or
        exits before it connects) stops the run with one line instead of filling a scorecard with failures.
        Returns the cells still to run, or the error that stops the run."""
        rest = list(cells)
        for agent, command in self.agent_cmds.items():
            first = next((c for c in rest if c.agent == agent and not trace_complete(self._trace(c))), None)
            if first is None:
                continue
            try:
                result = await self._cell(first)
            except StorageError as exc:
                return rest, exc
            if result is None:  # the run is being stopped
                return rest, None
            if never_connected(self._trace(first)):
                self._trace(first).unlink(missing_ok=True)
                log = self.out / "agent-logs" / f"{first.episode_id}.log"
                said = last_line(log)
                how = result.note.split(" (output in")[0] if result.note else result.status
                return rest, UserError(
                    f"--agent-cmd {command!r} ended ({how}) without connecting to its episode, so nothing else was "
                    f"run; its output is in {log}" + (f", last line: {said}" if said else "")
                )
            try:
                self._done(result)
            except StorageError as exc:
                return rest, exc
            rest.remove(first)
        return rest, None

    @contextmanager
    def _progress(self, total: int) -> Iterator[None]:
        with progress_bar(f"episodes ({self.transport})", total, self.show_progress) as bar:
            self._advance, self.console = bar.advance, bar.console
            try:
                yield
            finally:
                self._advance, self.console = (lambda: None), None

    def _done(self, result: CellResult) -> None:
        self.results.append(result)
        self._log(result)
        self._advance()

    async def _all(self, cells: list[Cell]) -> None:
        limiter = anyio.CapacityLimiter(self.concurrency)

        async def one(cell: Cell) -> None:
            try:
                async with limiter:
                    if self.stopped is not None or self.signal is not None:
                        return
                    result = await self._cell(cell)
                if result is None:  # the run is being stopped: the episode is not done
                    return
                self._done(result)
            except StorageError as exc:
                self._stop(exc, group.cancel_scope)

        async with anyio.create_task_group() as group:
            for cell in cells:
                group.start_soon(one, cell)

    def _log(self, result: CellResult) -> None:
        if self._run_log is None:
            try:
                self._run_log = (self.out / "run.jsonl").open("ab", buffering=0)
            except OSError as exc:
                raise storage_error(self.out / "run.jsonl", exc) from None
        log_result(self.out, result, self._run_log)

    async def _cell(self, cell: Cell) -> CellResult | None:
        """Run one episode and record how it ended; None when a signal is stopping the run meanwhile: then it
        ended because of the signal (a server stopped by the same Ctrl-C, a cancelled call), which is no outcome
        of the agent's, and its trace keeps no `agent_ended` (interrupted)."""
        path = self._trace(cell)
        if trace_complete(path):
            return CellResult(cell, "skipped", "finished in an earlier run")
        path.unlink(missing_ok=True)
        report = AgentReport()
        outcome: AgentOutcome = "finished"
        detail = ""
        served: list[Episode] = []
        scope = anyio.move_on_after(self.timeout_s)
        try:
            with scope:
                if cell.agent in self.agent_cmds:
                    outcome, detail = await self._external(cell)
                else:
                    await self._internal(cell, report, served)
        except Exception as exc:  # a crashing agent is an outcome of its episode, never the end of the run
            outcome, detail = outcome_of(exc)
        # Past its deadline the episode was stopped, whatever surfaced: on a loaded loop the stop can reach the
        # in-memory client's own task first, and the agent's next call then fails with "Connection closed" instead
        # of being cancelled. That is this episode's timeout, not a crash (a failed model endpoint stays itself).
        if scope.cancel_called and outcome != "endpoint_error":
            outcome, detail = "timeout", f"stopped after {self.timeout_s:g}s"
        if served and served[0].trace.failure is not None:  # the episode's trace could not be written
            raise served[0].trace.failure
        if self.signal is not None:
            return None
        if self.transport == "stdio" and cell.agent not in self.agent_cmds and outcome != "timeout":
            outcome, detail = server_side(path, outcome, detail)
        await self._finish(cell, outcome, detail, report, served[0] if served else None)
        return CellResult(cell, STATUS_OF[outcome], detail, bounded_notes(report.notes))

    async def _finish(
        self, cell: Cell, outcome: AgentOutcome, detail: str, report: AgentReport, episode: Episode | None = None
    ) -> None:
        """Append `agent_ended` once the server has recorded the episode's end (a stdio server in another process
        may need a moment after its client left). An episode served in this process that has ended and written
        its trace takes the line from its own writer, which knows its last number without reading the file."""
        label = self.labels.get(cell.agent)
        if episode is not None and episode.trace.closed and episode.started:
            episode.trace.write(AgentEnded, outcome=outcome, detail=detail, events=report.events, label=label,
                                repeat=cell.repeat)  # fmt: skip
            return
        self._ensure_trace(cell)
        await finish_trace(self._trace(cell), outcome, detail, report, label=label, repeat=cell.repeat,
                           wait=outcome != "server_crashed")  # fmt: skip

    async def _internal(self, cell: Cell, report: AgentReport, served: list[Episode]) -> None:
        """Run a built-in agent; the episode, when it runs in this process, is put in `served`."""
        task = cell.scenario.model.task(cell.task)
        assert task is not None
        agent = make_agent(cell.agent)
        injections = [(i.goal, i.golden_path) for i in getattr(cell.scenario.model, "injection_tasks", [])]
        brief = Brief(prompt=served_prompt(cell), plan=task.golden_path, call_timeout_s=self.call_timeout_s,
                      signatures=signatures_of(cell.scenario.model), report=report, injections=injections)  # fmt: skip
        async with open_episode(
            self.transport, cell.scenario, cell.task, cell.condition, self.traces, http_host=self.host,
            agent=cell.agent, episode_id=cell.episode_id, proxy=self.proxy, runner=True,
        ) as connected:  # fmt: skip
            if connected.episode is not None:
                served.append(connected.episode)
            await agent.run(connected.client, brief)

    def _ensure_trace(self, cell: Cell) -> None:
        """An agent that never reached the server still gets a trace (no answer), so the report counts it."""
        if (self.traces / f"{cell.episode_id}.jsonl").exists():
            return
        episode = self.host.registry.get(cell.episode_id) if self.host is not None else None
        if episode is None or episode.trace.closed:
            empty_trace(cell, self.traces, "http" if self.host else "stdio", "never_connected", proxy=self.proxy)
            return
        episode.start("none")
        episode.end("never_connected")

    async def _external(self, cell: Cell) -> tuple[AgentOutcome, str]:
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
            server = serve_command(cell.scenario, cell.task, cell.condition, self.traces, cell.episode_id, cell.agent,
                                   self.proxy, runner=True)  # fmt: skip
            env.update(stdio_env(server))
        log = self.out / "agent-logs" / f"{cell.episode_id}.log"
        try:
            code, timed_out = await run_external(command, env, served_prompt(cell), self.timeout_s, log)
        finally:
            if self.host is not None:
                served = self.host.registry.get(cell.episode_id)
                if served is not None:
                    served.end("disconnected")
        if timed_out:
            return "timeout", f"killed after {self.timeout_s:g}s"
        if code != 0:
            return "agent_crashed", f"exit code {code} (output in {log})"
        return "finished", ""

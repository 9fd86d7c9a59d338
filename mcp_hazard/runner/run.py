"""Run a matrix of episodes concurrently over a real transport, resumably, with a per-episode time limit.

Every episode ends with an `agent_ended` event that the runner appends to its trace: how the agent's run ended
(finished, agent_crashed, endpoint_error, timeout) and what the agent recorded that the server never saw. A crash
is an outcome, not a gap: the trace stays and the scorer counts the episode. On a rerun, an episode whose trace has
`agent_ended` is skipped, except when its model endpoint failed or the agent never connected (neither was the
agent's turn): those run again, as does any episode whose trace was cut short. The run log (`run.jsonl`) has one
line per episode with its status and the agent's notes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

import anyio

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.base import AgentReport, Brief, signatures_of
from mcp_hazard.errors import UserError
from mcp_hazard.runner.external import http_env, run_external, stdio_env
from mcp_hazard.runner.matrix import Cell
from mcp_hazard.runner.progress import progress_bar
from mcp_hazard.runner.transports import HttpHost, Transport, episode_maker, open_episode, serve_command
from mcp_hazard.server.episode import SUBMIT_TOOL, Episode
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.trace.events import AgentEnded, AgentOutcome, EndReason
from mcp_hazard.trace.writer import append_event, utc_now

if TYPE_CHECKING:
    from mcp_hazard.proxy.service import ProxyService

Status = Literal["done", "skipped", "timeout", "crashed", "endpoint_error"]
STATUS_OF: dict[AgentOutcome, Status] = {
    "finished": "done", "agent_crashed": "crashed", "endpoint_error": "endpoint_error", "timeout": "timeout",
}  # fmt: skip
MAX_NOTES = 60
MAX_NOTE_CHARS = 600
ENDED_WAIT_S = 5.0  # how long a stdio server may take to record its end after its client is gone


@dataclass
class CellResult:
    cell: Cell
    status: Status
    note: str = ""
    notes: list[str] = field(default_factory=list)


def _events(path: Path) -> list[dict[str, object]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def trace_complete(path: Path) -> bool:
    """A trace the runner finished (`agent_ended`), so a rerun skips it; except when the agent never had its turn:
    its model endpoint failed, or it never connected."""
    events = _events(path)
    ended = [e for e in events if e.get("type") == "agent_ended"]
    if not ended or ended[-1].get("outcome") == "endpoint_error":
        return False
    return not any(e.get("type") == "episode_ended" and e.get("reason") == "never_connected" for e in events)


def never_connected(path: Path) -> bool:
    return any(e.get("type") == "episode_ended" and e.get("reason") == "never_connected" for e in _events(path))


def bounded_notes(notes: list[str]) -> list[str]:
    """The agent's notes for the run log: each cut to MAX_NOTE_CHARS, at most MAX_NOTES of them."""
    kept = [n if len(n) <= MAX_NOTE_CHARS else n[: MAX_NOTE_CHARS - 1] + "…" for n in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        kept.append(f"({len(notes) - MAX_NOTES} more notes left out)")
    return kept


def _leaf(exc: BaseException) -> BaseException:
    """The first exception that is not a group: what an agent raised from inside the SDK client's task group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _outcome_of(exc: BaseException) -> tuple[AgentOutcome, str]:
    """An agent's exception as an episode outcome: endpoint_error when its model endpoint failed for good (anywhere
    in an exception group: the SDK client's tasks may fail alongside), else agent_crashed; with one line."""
    from mcp_hazard.agents.llm import LlmEndpointError

    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if isinstance(current, LlmEndpointError):
            return "endpoint_error", exception_line(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
    return "agent_crashed", exception_line(exc)


def log_result(out: Path, result: CellResult, log: IO[str] | None = None) -> None:
    """One line of the run log (`run.jsonl`) for a finished or skipped episode; `log`: the run log kept open."""
    record = {
        "ts": utc_now(), "episode_id": result.cell.episode_id, "agent": result.cell.agent,
        "status": result.status, "note": result.note, "notes": result.notes,
    }  # fmt: skip
    line = json.dumps(record, ensure_ascii=False) + "\n"
    if log is not None:
        log.write(line)
        log.flush()
        return
    with (out / "run.jsonl").open("a", encoding="utf-8") as opened:
        opened.write(line)


def empty_trace(
    cell: Cell, traces: Path, transport: str, reason: EndReason, episode_id: str | None = None,
    proxy: ProxyService | None = None,
) -> None:  # fmt: skip
    """A trace for an episode whose server never recorded one (or whose record was lost): started and ended with
    no agent action, so the report still counts the episode."""
    registry = EpisodeRegistry([cell.scenario], traces, transport=transport, **episode_maker(proxy))
    episode = registry.create(cell.scenario.id, cell.task, cell.condition, episode_id or cell.episode_id, cell.agent)
    episode.start("none")
    episode.end(reason)


async def finish_trace(
    path: Path, outcome: AgentOutcome, detail: str, report: AgentReport, *, label: str | None = None,
    repeat: int | None = None,
) -> None:  # fmt: skip
    """Append `agent_ended` once the server has recorded the episode's end (a stdio server in another process may
    need a moment after its client left); `label` and `repeat`: the agent's group and the attempt (`run
    --agent-label`, `--repeats`)."""
    with anyio.move_on_after(ENDED_WAIT_S):
        while not any(e.get("type") == "episode_ended" for e in _events(path)):
            await anyio.sleep(0.02)
    append_event(path, AgentEnded, outcome=outcome, detail=detail, events=report.events, label=label, repeat=repeat)


def served_prompt(cell: Cell) -> str:
    task = cell.scenario.model.task(cell.task)
    assert task is not None
    return f"{task.prompt.strip()}\n\nWhen you have the answer, call the `{SUBMIT_TOOL}` tool with it."


def exception_line(exc: BaseException) -> str:
    exc = _leaf(exc)
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _last_line(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    last = next((line for line in reversed(lines) if line), "")
    return last if len(last) <= 200 else last[:199] + "…"


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
        proxy: ProxyService | None = None,
        labels: dict[str, str] | None = None,
    ) -> None:
        """`proxy`: the cells' scenario is a real server's tools, reached through this running ProxyService."""
        self.proxy = proxy
        self.out = out
        self.traces = out / "traces"
        self.transport = transport
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.call_timeout_s = call_timeout_s
        self.agent_cmds = agent_cmds or {}
        self.show_progress = show_progress
        self.labels = labels or {}  # agent -> group (`--agent-label`), recorded in each agent_ended
        self.host: HttpHost | None = None
        self.results: list[CellResult] = []
        self._run_log: IO[str] | None = None
        self._advance: Callable[[], None] = lambda: None  # moves the progress bar on by one episode

    async def run(self, cells: list[Cell]) -> list[CellResult]:
        self.traces.mkdir(parents=True, exist_ok=True)
        try:
            return await self._run(cells)
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
                registry = EpisodeRegistry(scenarios, self.traces, transport="http", **episode_maker(self.proxy))
                self.host = HttpHost(registry, self.proxy)
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
        return self.results

    async def run_one(self, cell: Cell) -> CellResult:
        """One episode with a host of its own and no run log: the unit of work an executor hands to a worker
        (runner/ray_worker.py). The episode runs exactly as in `run`, so its trace is the same."""
        self.traces.mkdir(parents=True, exist_ok=True)
        if self.transport != "http":
            return await self._cell(cell)
        self.host = HttpHost(EpisodeRegistry([cell.scenario], self.traces, transport="http"))
        async with self.host.running():
            return await self._cell(cell)

    async def _first_contact(self, cells: list[Cell]) -> tuple[list[Cell], UserError | None]:
        """Run one episode of each external program alone before the others, so a program that cannot start (or
        exits before it connects) stops the run with one line instead of filling a scorecard with failures.
        Returns the cells still to run, or the error that stops the run."""
        rest = list(cells)
        for agent, command in self.agent_cmds.items():
            first = next((c for c in rest if c.agent == agent and not trace_complete(self._trace(c))), None)
            if first is None:
                continue
            result = await self._cell(first)
            if never_connected(self._trace(first)):
                self._trace(first).unlink(missing_ok=True)
                log = self.out / "agent-logs" / f"{first.episode_id}.log"
                said = _last_line(log)
                how = result.note.split(" (output in")[0] if result.note else result.status
                return rest, UserError(
                    f"--agent-cmd {command!r} ended ({how}) without connecting to its episode, so nothing else was "
                    f"run; its output is in {log}" + (f", last line: {said}" if said else "")
                )
            self._done(result)
            rest.remove(first)
        return rest, None

    def _trace(self, cell: Cell) -> Path:
        return self.traces / f"{cell.episode_id}.jsonl"

    @contextmanager
    def _progress(self, total: int) -> Iterator[None]:
        with progress_bar(f"episodes ({self.transport})", total, self.show_progress) as advance:
            self._advance = advance
            try:
                yield
            finally:
                self._advance = lambda: None

    def _done(self, result: CellResult) -> None:
        self.results.append(result)
        self._log(result)
        self._advance()

    async def _all(self, cells: list[Cell]) -> None:
        limiter = anyio.CapacityLimiter(self.concurrency)

        async def one(cell: Cell) -> None:
            async with limiter:
                result = await self._cell(cell)
            self._done(result)

        async with anyio.create_task_group() as group:
            for cell in cells:
                group.start_soon(one, cell)

    def _log(self, result: CellResult) -> None:
        if self._run_log is None:
            self._run_log = (self.out / "run.jsonl").open("a", encoding="utf-8")
        log_result(self.out, result, self._run_log)

    async def _cell(self, cell: Cell) -> CellResult:
        path = self._trace(cell)
        if trace_complete(path):
            return CellResult(cell, "skipped", "finished in an earlier run")
        path.unlink(missing_ok=True)
        report = AgentReport()
        outcome: AgentOutcome = "finished"
        detail = ""
        served: list[Episode] = []
        try:
            with anyio.move_on_after(self.timeout_s) as scope:
                if cell.agent in self.agent_cmds:
                    outcome, detail = await self._external(cell)
                else:
                    await self._internal(cell, report, served)
            if scope.cancelled_caught:
                outcome, detail = "timeout", f"stopped after {self.timeout_s:g}s"
        except Exception as exc:  # a crashing agent is an outcome of its episode, never the end of the run
            outcome, detail = _outcome_of(exc)
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
        await finish_trace(self._trace(cell), outcome, detail, report, label=label, repeat=cell.repeat)

    async def _internal(self, cell: Cell, report: AgentReport, served: list[Episode]) -> None:
        """Run a built-in agent; the episode, when it runs in this process, is put in `served`."""
        task = cell.scenario.model.task(cell.task)
        assert task is not None
        agent = make_agent(cell.agent)
        brief = Brief(prompt=served_prompt(cell), plan=task.golden_path, call_timeout_s=self.call_timeout_s,
                      signatures=signatures_of(cell.scenario.model), report=report)  # fmt: skip
        async with open_episode(
            self.transport, cell.scenario, cell.task, cell.condition, self.traces, http_host=self.host,
            agent=cell.agent, episode_id=cell.episode_id, proxy=self.proxy,
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
                                   self.proxy)  # fmt: skip
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

"""`mcp-hazard run --executor ray`: the matrix's episodes as Ray tasks, one episode per task (docs/scale-out.md).

The driver (this process) plans the matrix, skips episodes a previous run finished, and keeps at most
`--concurrency` tasks in flight, each asking Ray for `--ray-num-cpus`. A worker runs its episode exactly as the local
executor would (runner/ray_worker.py) and sends the trace back; the driver writes it into the run folder in one
step (a file appears whole or not at all) and logs it in `run.jsonl`. So a killed driver loses only the episodes
still in flight, and a rerun resumes as it does locally. A task whose worker dies is retried once by Ray; when the
retry is lost too, the driver records the episode as `agent_crashed` with the reason, and the run goes on.

Without `--ray-address` (or RAY_ADDRESS) a local Ray instance is started for the run and stopped after it; it
talks over 127.0.0.1 only. With an address the run joins that cluster as a driver.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

from mcp_hazard.errors import UserError
from mcp_hazard.runner.executor import Executor, Played
from mcp_hazard.runner.matrix import Cell
from mcp_hazard.runner.outcome import exception_line
from mcp_hazard.runner.progress import progress_bar
from mcp_hazard.runner.ray_worker import CellFields, Shipped, WorkerSettings, run_episode
from mcp_hazard.runner.run import (
    CellResult,
    bounded_notes,
    empty_trace,
    log_result,
    never_connected,
    trace_complete,
)
from mcp_hazard.runner.transports import Transport
from mcp_hazard.trace.events import AgentEnded
from mcp_hazard.trace.writer import append_event

FORWARDED_PREFIX = "MCP_HAZARD_"
"""Environment variables with this prefix (the llm agent's settings, for one) go to every worker: on a cluster the
workers do not share the driver's environment."""
LOCAL_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""Read by Ray when it is imported: a local instance then uses 127.0.0.1 for every address, not the machine's
network address (Ray's own setting for single-machine use on macOS and Windows)."""
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RaySettings:
    address: str | None = None
    num_cpus: float = 1.0
    env: tuple[str, ...] = ()
    """Further environment variables to pass from the driver to the workers (`--ray-env`)."""
    local_cpus: int | None = None
    """CPUs of a local instance started for the run (default: the machine's); for benches and tests."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'mcp-hazard[ray]'") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """`host:port` (or `ray://host:port`) of a cluster address; None for `auto`, `local` and the like."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _reachable(address: str) -> None:
    """Ray waits a long time on an address where nothing answers; a plain connection attempt says so at once."""
    where = _host_port(address)
    if where is None:
        return
    try:
        socket.create_connection(where, timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise UserError(f"--ray-address {address}: nothing answers there ({exc.strerror or exc})") from None


def _loopback(address: str | None) -> bool:
    where = _host_port(address) if address else None
    return address is None or (where is not None and where[0] in ("127.0.0.1", "localhost", "::1"))


@contextmanager
def connected(settings: RaySettings) -> Iterator[Any]:
    """Ray, connected: to the cluster at `settings.address` (or RAY_ADDRESS), else to a local instance started here
    and stopped afterwards. An already connected Ray (a bench or a test driving the executor) is used as it is."""
    address = settings.address or os.environ.get("RAY_ADDRESS") or None
    if _loopback(address) and "ray" not in sys.modules:
        os.environ.update({k: v for k, v in LOCAL_ONLY.items() if k not in os.environ})
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        _init(ray, address, settings)
    try:
        _check_cpus(ray, address, settings.num_cpus)
        yield ray
    finally:
        if started:
            ray.shutdown()


def _init(ray: Any, address: str | None, settings: RaySettings) -> None:
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if address is None:
        options |= {"address": "local", "include_dashboard": False, "num_cpus": settings.local_cpus}
    else:
        _reachable(address)
        options["address"] = address
    try:
        ray.init(**options)
    except Exception as exc:  # Ray raises ConnectionError, ValueError, RuntimeError... all mean "no cluster here"
        where = f"--ray-address {address}" if address else "--executor ray"
        raise UserError(f"{where}: could not start or reach Ray ({exception_line(exc)})") from None


def _check_cpus(ray: Any, address: str | None, wanted: float) -> None:
    """An episode that asks for more CPUs than the cluster has would wait for ever: refused on a local instance,
    a warning on a cluster (an autoscaler may add nodes)."""
    cpus = float(ray.cluster_resources().get("CPU", 0.0))
    if wanted <= cpus:
        return
    message = f"--ray-num-cpus {wanted:g}: the Ray cluster has {cpus:g} CPUs in all"
    if address is None:
        raise UserError(f"{message}; no episode could start")
    print(f"mcp-hazard: {message}; episodes wait until it has more", file=sys.stderr)


def check_transport(transport: str) -> None:
    if transport == "stdio":
        raise UserError(
            "--executor ray runs each episode in memory or over loopback HTTP on its worker; "
            "--transport stdio is for --executor local"
        )


def forwarded_env(names: tuple[str, ...]) -> dict[str, str]:
    """The driver's variables the workers get: every MCP_HAZARD_* one and those named by `--ray-env`."""
    missing = [name for name in names if name not in os.environ]
    if missing:
        raise UserError(f"--ray-env {missing[0]}: no such variable in this environment")
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIX) or k in names}


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write a file whole or not at all (a temporary sibling, then a rename), so a killed driver leaves no half
    trace for a rerun to trip over."""
    part = path.with_name(path.name + ".part")
    if isinstance(data, str):
        part.write_text(data, encoding="utf-8")
    else:
        part.write_bytes(data)
    os.replace(part, path)


def record_lost(cell: Cell, traces: Path, transport: Transport, reason: str) -> None:
    """The trace of an episode whose worker was lost twice: started and stopped with no agent action (whatever the
    agent did died with the worker), then `agent_crashed` with the reason, so the scorer counts it as a crash."""
    path = traces / f"{cell.episode_id}.jsonl"
    path.unlink(missing_ok=True)
    empty_trace(cell, traces, "http" if transport == "http" else "memory", "server_stopped")
    append_event(path, AgentEnded, outcome="agent_crashed", detail=reason)


class RayExecutor(Executor):
    """Runs cells on Ray and writes the run folder as `Runner` does (traces, run.jsonl, agent-logs)."""

    def __init__(self, out: Path, *, ray: RaySettings | None = None, **played: Unpack[Played]) -> None:
        check_transport(played["transport"])
        super().__init__(out, **played)
        self.settings = WorkerSettings(self.transport, self.timeout_s, self.call_timeout_s, self.agent_cmds)
        self.ray_settings = ray or RaySettings()
        self.env = forwarded_env(self.ray_settings.env)

    def run(self, cells: list[Cell]) -> list[CellResult]:
        with connected(self.ray_settings) as ray:
            self.traces.mkdir(parents=True, exist_ok=True)
            # Workers with a runtime environment are started for it; without one, Ray's idle workers serve.
            extra = {"runtime_env": {"env_vars": self.env}} if self.env else {}
            remote = ray.remote(run_episode).options(
                num_cpus=self.ray_settings.num_cpus, max_retries=1, retry_exceptions=False, **extra
            )
            scenarios = {id(c.scenario): ray.put(c.scenario) for c in cells}
            with progress_bar(f"episodes (ray, {self.transport})", len(cells), self.show_progress) as bar:
                self._advance = bar.advance
                todo = []
                for cell in cells:
                    if trace_complete(self._trace(cell)):
                        self._done(CellResult(cell, "skipped", "finished in an earlier run"))
                    else:
                        todo.append(cell)
                todo = self._first_contact(ray, remote, scenarios, todo)
                self._all(ray, remote, scenarios, todo)
        return self.results

    def _submit(self, remote: Any, scenarios: dict[int, Any], cell: Cell) -> Any:
        return remote.remote(scenarios[id(cell.scenario)], CellFields.of(cell), self.settings)

    def _first_contact(self, ray: Any, remote: Any, scenarios: dict[int, Any], cells: list[Cell]) -> list[Cell]:
        """As locally: the first episode of each external program runs alone, and one that never connects stops
        the run with one line (runner/run.py)."""
        rest = list(cells)
        for agent, command in self.settings.agent_cmds.items():
            first = next((c for c in rest if c.agent == agent), None)
            if first is None:
                continue
            result = self._collect(ray, first, self._submit(remote, scenarios, first))
            rest.remove(first)
            if never_connected(self._trace(first)):
                self._trace(first).unlink(missing_ok=True)
                log = self.out / "agent-logs" / f"{first.episode_id}.log"
                how = result.note.split(" (output in")[0] if result.note else result.status
                raise UserError(
                    f"--agent-cmd {command!r} ended ({how}) without connecting to its episode on its Ray worker, "
                    f"so nothing else was run; its output is in {log}"
                )
            self._done(result)
        return rest

    def _all(self, ray: Any, remote: Any, scenarios: dict[int, Any], cells: list[Cell]) -> None:
        waiting = iter(cells)
        flying: dict[Any, Cell] = {}
        while True:
            while len(flying) < self.concurrency and (cell := next(waiting, None)) is not None:
                flying[self._submit(remote, scenarios, cell)] = cell
            if not flying:
                break
            ready, _ = ray.wait(list(flying), num_returns=1)
            for ref in ready:
                self._done(self._collect(ray, flying.pop(ref), ref))

    def _collect(self, ray: Any, cell: Cell, ref: Any) -> CellResult:
        """The episode's result written into the run folder; a lost worker becomes a recorded crash."""
        try:
            shipped: Shipped = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # our code raised on the worker: not a lost worker, not retried
            reason = f"the episode's Ray task failed: {exception_line(exc.cause if exc.cause is not None else exc)}"
            record_lost(cell, self.traces, self.transport, reason)
            return CellResult(cell, "crashed", reason)
        except ray.exceptions.RayError as exc:  # the worker or its node died, on the first try and on the retry
            reason = f"Ray worker lost on both attempts: {exception_line(exc)}"
            record_lost(cell, self.traces, self.transport, reason)
            return CellResult(cell, "crashed", reason)
        shown = str(self.out)
        if shipped.agent_log is not None:
            log = self.out / "agent-logs" / f"{cell.episode_id}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(log, shipped.agent_log)
        write_atomically(self._trace(cell), shipped.trace.replace(shipped.work_dir, shown))
        notes = [n.replace(shipped.work_dir, shown) for n in shipped.notes]
        return CellResult(cell, shipped.status, shipped.note.replace(shipped.work_dir, shown), bounded_notes(notes))

    def _done(self, result: CellResult) -> None:
        self.results.append(result)
        log_result(self.out, result)
        self._advance()

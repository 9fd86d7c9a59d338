"""Runner throughput: episodes per second of the runner with the recovering agent, through mcp-hazard and through a
bare SDK server serving the same tools. bench/README.md explains it; docs/performance.md records the figures.

    python -m bench.runner_throughput [--episodes 256] [--stdio-episodes 24] [--stdio-hazard-episodes 12]
                                      [--transport memory|stdio|both] [--repeat 2] [--concurrency 4]
                                      [--no-hazards] [--latency] [--profile]

The work: the recovering agent (`RecoveringAgent.run(client, Brief)`, with the task's golden path as its plan)
solves the tasks of the shipped scenarios, strict profile, clean condition, one episode after another (concurrency
1), and over stdio also with `--concurrency` episodes at once (default 4). The cells come from `runner.matrix.plan`
with seeds 0, 1, 2, ...; ordered by seed, so any prefix covers every task equally often. Untimed warm-up passes go
first.

(a) mcp-hazard: `Runner(...).run(cells)` as `mcp-hazard run` does it: `open_episode` memory (the server in this
    process) or stdio (`python -m mcp_hazard serve ...` per episode), traces to a temp dir, the run log, the
    per-episode time limit.
(b) bare: the same agent, brief, cells, concurrency limiter and time limit, but the client talks to
    `bench.bare_server` (`Client(bare_server(scenario, task))` in memory, or
    `StdioServerParameters(python -m bench.bare_server SCENARIO --task TASK)`): the scenario's behaviours and nothing
    else (no validation, hazards, trace or episode state).

Both run in this process, interleaved (a, b, then b, a on every other pass), each on a fresh event loop; the best
of `--repeat` counts, and the median of the per-pass ratios is printed next to the ratio of the bests.

With hazards (default on, mcp-hazard only: a bare server has none), (a) also runs every `--hazard all` condition
that applies to a task (seed 0; latency left out unless `--latency`, because it only sleeps past the call timeout):
all of them in memory, an evenly spaced sample of `--stdio-hazard-episodes` over stdio. These figures include the
agent's own back-off sleeps and are reported on their own rows, without a ratio. CPU seconds (this process plus the
stdio server processes it waited for) are printed next to the wall times.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench.processes import load_average

REPO = Path(__file__).resolve().parents[1]
SCENARIO_DIR = REPO / "scenarios"
AGENT = "recovering"
CALL_TIMEOUT_S = 2.0  # the default of `mcp-hazard run --call-timeout`
EPISODE_TIMEOUT_S = 60.0  # the default of `mcp-hazard run --timeout`


@dataclass
class Outcome:
    """One timed pass over a list of cells."""

    seconds: float
    cpu_s: float  # this process plus the server processes it waited for (stdio)
    episodes: int
    statuses: Counter[str]
    correct: int


@dataclass
class Measurement:
    transport: str
    concurrency: int
    condition: str  # "clean" or "hazards"
    server: str  # "mcp-hazard" or "bare"
    cells: list[Any]
    runs: list[Outcome] = field(default_factory=list)

    @property
    def best(self) -> Outcome:
        return min(self.runs, key=lambda run: run.seconds)

    @property
    def eps(self) -> float:
        return self.best.episodes / self.best.seconds


# -- the cells ---------------------------------------------------------------------------------------------------------


def load() -> list[Any]:
    from mcp_hazard.load import load_scenarios

    return load_scenarios([str(SCENARIO_DIR)])


def clean_cells(scenarios: list[Any], episodes: int) -> list[Any]:
    """`episodes` clean cells, seeds 0, 1, 2, ... (the same work per seed: clean behaviours are deterministic)."""
    from mcp_hazard.runner.matrix import plan

    tasks = sum(len(s.model.tasks) for s in scenarios)
    seeds = list(range(-(-episodes // tasks)))
    cells = plan(scenarios, [AGENT], [], ["strict"], seeds)
    cells.sort(key=lambda cell: cell.seed)  # stable: every task once per seed, so a prefix is balanced
    return cells[:episodes]


def hazard_cells(scenarios: list[Any], latency: bool) -> list[Any]:
    """Every `--hazard all` condition that applies to a task, seed 0, strict; without latency unless asked."""
    from mcp_hazard.runner.matrix import CLEAN, plan

    cells = plan(scenarios, [AGENT], ["all"], ["strict"], [0])
    return [c for c in cells if c.label != CLEAN and (latency or c.label != "latency")]


def sample(cells: list[Any], count: int) -> list[Any]:
    """`count` evenly spaced cells (all of them when there are fewer)."""
    if count >= len(cells):
        return list(cells)
    return [cells[i * len(cells) // count] for i in range(count)]


# -- (a) mcp-hazard through the Runner ---------------------------------------------------------------------------------


def _submitted(path: Path) -> Any:
    if not path.exists():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("type") == "answer_submitted":
            return event.get("answer")
    return None


def _correct(cell: Any, answer: Any) -> bool:
    from mcp_hazard.scenario.answers import answer_matches

    task = cell.scenario.model.task(cell.task)
    return bool(answer_matches(task.answer, answer))


def run_mcp_hazard(cells: list[Any], transport: str, concurrency: int) -> Outcome:
    from mcp_hazard.runner.run import Runner

    with tempfile.TemporaryDirectory(prefix="mcp-hazard-runbench-") as scratch:
        out = Path(scratch)
        runner = Runner(
            out, transport=transport, concurrency=concurrency, timeout_s=EPISODE_TIMEOUT_S,  # type: ignore[arg-type]
            call_timeout_s=CALL_TIMEOUT_S, show_progress=False,
        )  # fmt: skip
        seconds, cpu_s = _timed_run(lambda: runner.run(cells))
        statuses: Counter[str] = Counter(str(result.status) for result in runner.results)
        correct = sum(_correct(c, _submitted(runner.traces / f"{c.episode_id}.jsonl")) for c in cells)
    return Outcome(seconds, cpu_s, len(cells), statuses, correct)


# -- (b) the same agent against the bare server ------------------------------------------------------------------------


def _bare_client(cell: Any, transport: str) -> Any:
    from mcp import Client, StdioServerParameters

    from bench.bare_server import bare_server

    if transport == "memory":
        return Client(bare_server(cell.scenario, cell.task))
    command = ["-m", "bench.bare_server", cell.scenario.path, "--task", cell.task]
    return Client(StdioServerParameters(command=sys.executable, args=command, cwd=str(REPO)))


def run_bare(cells: list[Any], transport: str, concurrency: int) -> Outcome:
    """What `Runner._all` / `_cell` / `_internal` do, minus the trace and run log, with the bare server."""
    from mcp_hazard.agents import make_agent
    from mcp_hazard.agents.drive import Brief
    from mcp_hazard.runner.run import served_prompt

    statuses: Counter[str] = Counter()
    answers: dict[str, Any] = {}

    async def all_cells() -> None:
        limiter = anyio.CapacityLimiter(concurrency)

        async def one(cell: Any) -> None:
            async with limiter:
                task = cell.scenario.model.task(cell.task)
                agent = make_agent(AGENT)
                brief = Brief(prompt=served_prompt(cell), plan=task.golden_path, call_timeout_s=CALL_TIMEOUT_S)
                try:
                    with anyio.move_on_after(EPISODE_TIMEOUT_S) as scope:
                        async with _bare_client(cell, transport) as client:
                            report = await agent.run(client, brief)
                        answers[cell.episode_id] = report.answer
                    statuses["timeout" if scope.cancelled_caught else "done"] += 1
                except Exception:
                    statuses["crashed"] += 1

        async with anyio.create_task_group() as group:
            for cell in cells:
                group.start_soon(one, cell)

    seconds, cpu_s = _timed_run(all_cells)
    correct = sum(_correct(c, answers.get(c.episode_id)) for c in cells)
    return Outcome(seconds, cpu_s, len(cells), statuses, correct)


def _cpu() -> float:
    """CPU seconds of this process and of its children that have been waited for (the stdio servers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _timed_run(make: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """Wall time and CPU time of `make()` on a fresh event loop, loop start-up excluded."""
    elapsed: list[tuple[float, float]] = []

    async def timed() -> None:
        began, cpu = time.perf_counter(), _cpu()
        await make()
        elapsed.append((time.perf_counter() - began, _cpu() - cpu))

    anyio.run(timed)
    return elapsed[0]


# -- profile -----------------------------------------------------------------------------------------------------------


def profile(cells: list[Any], top: int = 30) -> str:
    """cProfile of one memory pass through the Runner: cumulative time, functions of mcp_hazard only; then own time.
    The untimed answer check and temp-dir clean-up of `run_mcp_hazard` are in it too (a few percent)."""
    profiler = cProfile.Profile()
    profiler.runcall(run_mcp_hazard, cells, "memory", 1)
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("cumulative").print_stats(r"mcp_hazard[/\\]", top)
    stats.sort_stats("tottime").print_stats(top)
    return text.getvalue()


# -- main --------------------------------------------------------------------------------------------------------------


def _row(m: Measurement, bare: Measurement | None) -> str:
    best = m.best
    ratio = f"{m.eps / bare.eps:6.2f}" if bare else f"{'-':>6}"
    # Per pass, the two servers ran back to back on the same cells: eps ratio = bare seconds / mcp-hazard seconds.
    paired = ""
    if bare:
        paired = f"{statistics.median(b.seconds / a.seconds for a, b in zip(m.runs, bare.runs, strict=True)):6.2f}"
    bare_eps = f"{bare.eps:10.2f}" if bare else f"{'-':>10}"
    cpu = f"{best.cpu_s / best.episodes * 1000:7.1f}"
    if bare:
        cpu += f" / {bare.best.cpu_s / bare.best.episodes * 1000:6.1f}"
    correct = f"{best.correct}/{best.episodes}" + (f" / {bare.best.correct}/{bare.best.episodes}" if bare else "")
    return (f"{m.transport:<9} {m.concurrency:>4} {m.condition:<9} {best.episodes:>8} {m.eps:16.2f} {bare_eps} "
            f"{ratio} {paired or '-':>7}  {cpu:<16} {correct}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.runner_throughput", description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=256, help="clean episodes per memory pass (default 256)")
    parser.add_argument("--stdio-episodes", type=int, default=24, help="clean episodes per stdio pass (default 24)")
    parser.add_argument("--stdio-hazard-episodes", type=int, default=12,
                        help="hazard episodes per stdio pass, an evenly spaced sample (default 12)")  # fmt: skip
    parser.add_argument("--transport", choices=["memory", "stdio", "both"], default="both")
    parser.add_argument("--repeat", type=int, default=2, help="passes of each measurement; the best counts (default 2)")
    parser.add_argument("--concurrency", type=int, default=4, help="the second stdio concurrency (default 4)")
    parser.add_argument("--no-hazards", action="store_true", help="skip the mcp-hazard runs under hazards")
    parser.add_argument("--latency", action="store_true", help="include the latency hazard (it sleeps ~2 s a call)")
    parser.add_argument("--profile", action="store_true", help="also cProfile one clean memory pass of the Runner")
    args = parser.parse_args(argv)
    sizes = (args.episodes, args.stdio_episodes, args.stdio_hazard_episodes, args.repeat, args.concurrency)
    if min(sizes) < 1:
        parser.error("episode counts, --repeat and --concurrency must be positive")

    from mcp_hazard.logs import configure_logging

    configure_logging("warning")
    os.chdir(REPO)  # as `mcp-hazard run` from the project root; `python -m bench.bare_server` needs it too
    scenarios = load()
    hazards = [] if args.no_hazards else hazard_cells(scenarios, args.latency)
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} ({platform.machine()}, "
          f"{platform.system()}); load average before: {load_average()}")  # fmt: skip
    hazard_note = f"{len(hazards)} hazard cells" + ("" if args.latency else " (latency left out)")
    print(f"agent: {AGENT}, strict, call timeout {CALL_TIMEOUT_S:g} s; "
          f"{sum(len(s.model.tasks) for s in scenarios)} tasks in {len(scenarios)} scenarios; "
          f"{hazard_note if hazards else 'no hazard runs'}")  # fmt: skip

    plans: list[tuple[str, int]] = []
    if args.transport in ("memory", "both"):
        plans.append(("memory", 1))
    if args.transport in ("stdio", "both"):
        plans += [("stdio", 1), ("stdio", args.concurrency)]
    measurements: list[Measurement] = []
    for transport, concurrency in plans:
        clean = clean_cells(scenarios, args.episodes if transport == "memory" else args.stdio_episodes)
        measurements.append(Measurement(transport, concurrency, "clean", "mcp-hazard", clean))
        measurements.append(Measurement(transport, concurrency, "clean", "bare", clean))
        if hazards:
            chosen = hazards if transport == "memory" else sample(hazards, args.stdio_hazard_episodes)
            measurements.append(Measurement(transport, concurrency, "hazards", "mcp-hazard", chosen))

    # Warm-up, untimed: lazy imports in this process, and byte-code caches for the stdio servers' first start.
    for transport in dict.fromkeys(t for t, _c in plans):
        run_mcp_hazard(clean_cells(scenarios, 2), transport, 1)
        run_bare(clean_cells(scenarios, 2), transport, 1)
        if hazards:
            run_mcp_hazard(sample(hazards, 4), "memory", 1)

    began = time.perf_counter()
    for index in range(args.repeat):  # interleaved, so both servers see the same machine state
        order = list(measurements)
        if index % 2:  # every other pass the bare server goes first
            for i, m in enumerate(order):
                if m.server == "bare" and i and order[i - 1].server == "mcp-hazard":
                    order[i - 1], order[i] = m, order[i - 1]
        for m in order:
            run = run_mcp_hazard if m.server == "mcp-hazard" else run_bare
            m.runs.append(run(m.cells, m.transport, m.concurrency))
            outcome = m.runs[-1]
            print(f"  {m.transport:<6} c={m.concurrency} {m.condition:<7} {m.server:<10} "
                  f"{outcome.episodes:>4} episodes {outcome.seconds:7.2f} s  "
                  f"{outcome.episodes / outcome.seconds:7.2f} eps/s  cpu {outcome.cpu_s:6.2f} s  "
                  f"correct {outcome.correct}/{outcome.episodes}  {dict(outcome.statuses)}", flush=True)  # fmt: skip
    total = time.perf_counter() - began

    print()
    print(f"{'transport':<9} {'conc':>4} {'condition':<9} {'episodes':>8} {'mcp-hazard eps/s':>16} "
          f"{'bare eps/s':>10} {'ratio':>6} {'paired':>7}  {'cpu ms/ep':<16} correct (mcp-hazard / bare)")  # fmt: skip
    by_key = {(m.transport, m.concurrency, m.condition, m.server): m for m in measurements}
    for transport, concurrency in plans:
        for condition in ("clean", "hazards"):
            ours = by_key.get((transport, concurrency, condition, "mcp-hazard"))
            if ours is not None:
                print(_row(ours, by_key.get((transport, concurrency, condition, "bare"))))
    print()
    print("ratio = best eps/s mcp-hazard / best eps/s bare (1.00 = no overhead); paired = median over the passes of")
    print("the same ratio within one pass; cpu ms/ep = CPU per episode of the best pass, this process plus the stdio")
    print("server processes (mcp-hazard / bare); hazards = mcp-hazard only, including the agent's back-off sleeps")
    print(f"measured in {total:.0f} s; load average after: {load_average()}")

    if args.profile:
        cells = clean_cells(scenarios, args.episodes)
        print(f"\ncProfile of one clean memory pass through the Runner ({len(cells)} episodes):")
        print(profile(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())

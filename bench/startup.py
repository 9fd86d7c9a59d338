"""Start-up: from spawning a stdio server to the first `tools/list` answer, `mcp-hazard serve` against the bare SDK
server serving the same tools. bench/README.md explains it; docs/performance.md records the figures.

    python -m bench.startup [--rounds 20] [--scenario scenarios/travel.yaml] [--task fare-class] [--mode auto]
                            [--importtime-runs 3] [--top 15] [--no-importtime]

Each round, the official SDK client spawns the server (`Client(StdioServerParameters(...))`), connects (the
handshake of the era `--mode` picks), and lists the tools; the wall time from before the spawn until the listing
returns counts, and the server process's CPU at that moment (user + system, from /proc; 10 ms ticks). Then the
client closes (untimed). (a) `python -m mcp_hazard serve SCENARIO --task T --trace-dir D` (tracing on, a temp dir),
(b) `python -m bench.bare_server SCENARIO --task T`. Rounds alternate a, b, b, a, ... after one untimed round of each
(byte-code caches). Printed: best and median of each, the time ratio ours / bare (1.00 = as fast; the goal is
<= 1.05) of the bests and the median of the paired ratios, and the CPU.

Then `python -X importtime` of both programs (stdin closed, so each exits once it is ready to serve): the modules
`mcp-hazard serve` imports that the bare server does not, grouped under the first of them on each import chain,
with the summed own time of those modules (the minimum over `--importtime-runs` runs) and their cumulative time.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from bench.processes import children, cpu_of, load_average

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Side:
    name: str
    command: list[str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    tools: int = 0


def commands(scenario: str, task: str, trace_dir: Path) -> tuple[list[str], list[str]]:
    ours = [sys.executable, "-m", "mcp_hazard", "serve", scenario, "--task", task, "--trace-dir", str(trace_dir)]
    bare = [sys.executable, "-m", "bench.bare_server", scenario, "--task", task]
    return ours, bare


async def one_round(side: Side, mode: str) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=side.command[0], args=side.command[1:], cwd=str(REPO))
    before = children()
    began = time.perf_counter()
    async with Client(params, mode=mode) as client:
        listed = await client.list_tools()
        wall = time.perf_counter() - began
        pid = next(iter(children() - before), None)
        cpu = cpu_of(pid)
    side.wall.append(wall)
    side.cpu.append(cpu if cpu is not None else float("nan"))
    side.tools = len(listed.tools)


# -- -X importtime -----------------------------------------------------------------------------------------------------

_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


@dataclass
class Imported:
    name: str
    own: int
    cumulative: int
    depth: int
    parent: str | None


def importtime(command: list[str]) -> dict[str, Imported]:
    """Every module a program imports, with its own and cumulative µs and the module that imported it."""
    ran = subprocess.run([command[0], "-X", "importtime", *command[1:]], cwd=REPO, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    # importtime prints a module after its children; a module's parent is the next line with a smaller depth.
    rows = [(int(m[1]), int(m[2]), len(m[3]) // 2, m[4]) for m in map(_LINE.match, ran.stderr.splitlines()) if m]
    found: dict[str, Imported] = {}
    pending: list[tuple[int, Imported]] = []  # (depth, module) still waiting for its parent
    for own, cumulative, depth, name in rows:
        module = Imported(name, own, cumulative, depth, None)
        while pending and pending[-1][0] > depth:
            pending.pop()[1].parent = name
        pending.append((depth, module))
        found[name] = module
    return found


def offenders(
    ours_runs: list[dict[str, Imported]], bare_runs: list[dict[str, Imported]]
) -> list[tuple[str, int, int, int]]:
    """(module, summed own µs of the extra modules under it, its cumulative µs, how many) for each root of extra
    modules: imported by `serve`, not by the bare server, and not under another such module."""
    bare_names = set().union(*(run.keys() for run in bare_runs))
    first = ours_runs[0]
    extra = {name for name in first if name not in bare_names}
    own = {name: min(run[name].own for run in ours_runs if name in run) for name in extra}
    cumulative = {name: min(run[name].cumulative for run in ours_runs if name in run) for name in extra}

    def root(name: str) -> str:
        top = name
        parent = first[name].parent
        while parent is not None:
            if parent in extra:
                top = parent
            parent = first[parent].parent if parent in first else None
        return top

    groups: dict[str, list[str]] = {}
    for name in extra:
        groups.setdefault(root(name), []).append(name)
    rows = [(top, sum(own[n] for n in names), cumulative[top], len(names)) for top, names in groups.items()]
    return sorted(rows, key=lambda row: -row[1])


# -- main --------------------------------------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds of each server (default 20)")
    parser.add_argument("--scenario", default="scenarios/travel.yaml", help="scenario file (default travel)")
    parser.add_argument("--task", default="fare-class", help="task served (default fare-class)")
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy", "2026-07-28"],
                        help="the SDK client's protocol era (default auto)")  # fmt: skip
    parser.add_argument("--importtime-runs", type=int, default=3, help="-X importtime runs of each (default 3)")
    parser.add_argument("--top", type=int, default=15, help="import offenders to print (default 15)")
    parser.add_argument("--no-importtime", action="store_true", help="skip the -X importtime part")
    args = parser.parse_args(argv)
    if min(args.rounds, args.importtime_runs, args.top) < 1:
        parser.error("--rounds, --importtime-runs and --top must be positive")
    os.chdir(REPO)
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} ({platform.machine()}, "
          f"{platform.system()}); load average before: {load_average()}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-startbench-") as scratch:
        ours_command, bare_command = commands(args.scenario, args.task, Path(scratch))
        ours, bare = Side("mcp-hazard serve", ours_command), Side("bare_server", bare_command)
        print(f"(a) {' '.join(ours_command[1:])}\n(b) {' '.join(bare_command[1:])}\nclient mode {args.mode}")

        async def rounds() -> None:
            for side in (ours, bare):  # untimed: byte-code caches, the page cache
                await one_round(side, args.mode)
            for side in (ours, bare):
                side.wall.clear()
                side.cpu.clear()
            for index in range(args.rounds):
                for side in (ours, bare) if index % 2 == 0 else (bare, ours):
                    await one_round(side, args.mode)

        began = time.perf_counter()
        anyio.run(rounds)
        elapsed = time.perf_counter() - began

        print()
        print(f"{'server':<18} {'tools':>5} {'best ms':>8} {'median ms':>9} {'cpu best ms':>11} {'cpu median ms':>13}")
        for side in (ours, bare):
            print(f"{side.name:<18} {side.tools:>5} {_ms(min(side.wall)):>8} {_ms(statistics.median(side.wall)):>9} "
                  f"{_ms(min(side.cpu)):>11} {_ms(statistics.median(side.cpu)):>13}")  # fmt: skip
        paired = statistics.median(a / b for a, b in zip(ours.wall, bare.wall, strict=True))
        cpu_paired = statistics.median(a / b for a, b in zip(ours.cpu, bare.cpu, strict=True))
        print(f"time ratio ours / bare: best {min(ours.wall) / min(bare.wall):.3f}, median of paired {paired:.3f}; "
              f"cpu ratio: median {statistics.median(ours.cpu) / statistics.median(bare.cpu):.3f}, "
              f"median of paired {cpu_paired:.3f}  (1.00 = as fast as bare; goal <= 1.05)")  # fmt: skip
        print(f"{args.rounds} rounds each in {elapsed:.0f} s; load average after: {load_average()}")

        if not args.no_importtime:
            ours_runs = [importtime(ours_command) for _ in range(args.importtime_runs)]
            bare_runs = [importtime(bare_command) for _ in range(args.importtime_runs)]
            total_ours = min(sum(m.own for m in run.values()) for run in ours_runs)
            total_bare = min(sum(m.own for m in run.values()) for run in bare_runs)
            rows = offenders(ours_runs, bare_runs)
            print()
            print(f"-X importtime (min of {args.importtime_runs}): serve imports {len(ours_runs[0])} modules "
                  f"({total_ours / 1000:.0f} ms own time), bare {len(bare_runs[0])} ({total_bare / 1000:.0f} ms); "
                  f"{sum(r[3] for r in rows)} modules only serve imports, "
                  f"{sum(r[1] for r in rows) / 1000:.0f} ms:")  # fmt: skip
            print(f"  {'module (first of its chain that bare does not import)':<56} {'extra µs':>9} "
                  f"{'cumulative µs':>13} {'modules':>7}")  # fmt: skip
            for name, own, cumulative, count in rows[: args.top]:
                print(f"  {name:<56} {own:>9} {cumulative:>13} {count:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

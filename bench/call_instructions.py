"""Call overhead counted in instructions: what one `tools/call` costs mcp-hazard (tracing on) against the bare SDK
server, as valgrind's callgrind counts the instructions executed, which a busy or noisy machine does not change.
bench/call_overhead.py times the same calls; this is its deterministic companion (docs/performance.md has both).

    python -m bench.call_instructions [--transport memory,http] [--condition clean,transient,...] [--calls 300]
                                      [--warmup 30] [--scenario scenarios/travel.yaml] [--task fare-class] [--jobs 2]

Only the measured calls are counted: the client makes `--warmup` calls, asks callgrind for a dump, makes `--calls`
calls and asks again, and the count between the two dumps is divided by `--calls`. Start-up, imports, the handshake,
the listing, first-call work and the exit (whose garbage collection moves by tens of millions of instructions from
run to run) stay out; so does a full collection of what start-up left on the heap (`gc.freeze()` before counting,
in the process that makes the calls). A process under callgrind marks the two points by calling `os.getpgrp()`,
which callgrind dumps before (`--dump-before=getpgrp`); a server under callgrind is asked by `callgrind_control
--dump PID`.
- memory: the whole process (SDK client and server in one) under callgrind;
- http: the server process under callgrind (`mcp_hazard serve --http` with one episode made by `POST /episodes`, or
  `bench.bare_server --http`), driven by a client outside valgrind; and the client process alone under callgrind
  against each server outside it. The end-to-end ratio is (bare server + client) / (ours + client): the call as a
  whole, as call_overhead's wall-clock ratio sees it.
The calls are the task's golden-path calls in a cycle, as call_overhead makes them; the conditions are its conditions
(bench/call_conditions.py). Ratios are bare / ours: 1.00 = no overhead. Needs valgrind (with callgrind_control) on
PATH; takes a few minutes per transport (callgrind runs a program about 50 times slower).

`--simulate` also has callgrind simulate the caches and the branch predictor (`--cache-sim=yes --branch-sim=yes`,
about three times slower again) and prints, per call, the first-level instruction and data cache misses and the
mispredicted branches of each side: what an instruction count leaves out when the same instructions take longer in
place (code that comes in cold, the interpreter's dispatch guessing wrong). The simulated caches are callgrind's
model of this machine's, not the hardware's own counters, which a virtual machine may not expose.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.call_conditions import CONDITIONS, Call, conditions, golden_calls
from bench.processes import OPERATOR, REPO, load_average, stop
from mcp_hazard.runner.transports import free_port

TRANSPORTS = ("memory", "http")
_EVENTS = re.compile(r"^events: (.+)$", re.MULTILINE)
_TOTALS = re.compile(r"^totals: (.+)$", re.MULTILINE)
SIMULATED = {"I1 misses": ("I1mr",), "D1 misses": ("D1mr", "D1mw"), "mispredicted branches": ("Bcm", "Bim")}
"""What `--simulate` prints per call, from callgrind's events."""

Counts = dict[str, int]


def callgrind(command: list[str], out: Path, simulate: bool = False) -> list[str]:
    simulation = ["--cache-sim=yes", "--branch-sim=yes"] if simulate else []
    return ["valgrind", "--tool=callgrind", *simulation, "--dump-before=getpgrp", f"--callgrind-out-file={out}",
            *command]  # fmt: skip


def _measured(out: Path, log: Path) -> Counts:
    """Each event's count between the two dumps (`Ir`, the instructions, always): the second part callgrind wrote
    (`OUT.2`)."""
    parts = [out.with_name(f"{out.name}.{number}") for number in (1, 2, 3)]
    if not (parts[0].exists() and parts[1].exists()) or parts[2].exists():
        raise SystemExit(f"callgrind did not dump exactly twice before the end ({out}*; log {log})")
    return dump_counts(parts[1])


def dump_counts(dump: Path) -> Counts:
    """Each event's total in one part callgrind wrote (`Ir`, the instructions, always)."""
    text = dump.read_text(errors="replace")
    events, totals = _EVENTS.search(text), _TOTALS.search(text)
    if events is None or totals is None:
        raise SystemExit(f"no totals in {dump}")
    return dict(zip(events.group(1).split(), map(int, totals.group(1).split()), strict=False))


# -- the programs that run under callgrind (this module with --child) ------------------------------------------------


def _mark(server_pid: int) -> None:
    """A dump: of this process if callgrind runs it (it dumps before `getpgrp`), of the server if it runs that."""
    os.getpgrp()
    if server_pid:
        subprocess.run(["callgrind_control", "--dump", str(server_pid)], check=True, capture_output=True)


async def _drive(client: Any, calls: list[Call], names: dict[str, str], args: argparse.Namespace) -> None:
    for number in range(args.warmup + args.calls):
        if number == args.warmup:
            # What start-up left on the heap is set aside: whether a full collection of it falls inside the counted
            # calls is chance, and moved one side's count by 10% between runs. The calls' own garbage is counted.
            gc.collect()
            gc.freeze()
            _mark(args.server_pid)
        call = calls[number % len(calls)]
        result = await client.call_tool(names.get(call.tool, call.tool), call.arguments)
        if result.is_error and not result.content:
            raise SystemExit(f"call {number} failed: {result}")
    _mark(args.server_pid)


def _child(args: argparse.Namespace) -> None:
    """One measured program: `memory SIDE`, or the client of `http URL_OR_BASE SIDE`."""
    import anyio
    import httpx
    from mcp import Client

    from mcp_hazard.load import load_scenario

    scenario = load_scenario(args.scenario)
    calls = golden_calls(scenario, args.task)
    hazards = json.loads(args.hazards)
    names = {call.tool: f"{call.tool}_v2" for call in calls} if args.renamed else {}

    async def memory() -> None:
        from bench.bare_server import bare_server
        from mcp_hazard.condition import Condition
        from mcp_hazard.runner.transports import open_episode
        from mcp_hazard.scenario.hazard_spec import HazardSpec

        if args.side == "bare":
            async with Client(bare_server(scenario, args.task)) as client:
                await client.list_tools()
                await _drive(client, calls, {}, args)
            return
        condition = Condition(hazards=[HazardSpec.model_validate(h) for h in hazards])
        with tempfile.TemporaryDirectory() as traces:
            async with open_episode("memory", scenario, args.task, condition, Path(traces)) as connected:
                await connected.client.list_tools()
                await _drive(connected.client, calls, names, args)

    async def http() -> None:
        url = f"{args.base}/mcp"
        if args.side == "ours":
            async with httpx.AsyncClient(timeout=600, headers=OPERATOR) as plain:
                body = {"scenario": scenario.id, "task": args.task, "seed": 0, "hazards": hazards}
                created = await plain.post(f"{args.base}/episodes", json=body)
                if created.status_code != 201:
                    raise SystemExit(f"POST /episodes: {created.status_code} {created.text}")
                url = created.json()["mcp_url"]
        async with Client(url, read_timeout_seconds=600) as client:
            await client.list_tools()
            await _drive(client, calls, names, args)

    anyio.run(memory if args.transport == "memory" else http)


# -- the measurements -----------------------------------------------------------------------------------------------


def _child_command(args: argparse.Namespace, transport: str, side: str, hazards: Any, renamed: bool,
                   base: str = "", server_pid: int = 0) -> list[str]:  # fmt: skip
    command = [sys.executable, "-m", "bench.call_instructions", "--child", transport, side, "--calls", str(args.calls),
               "--warmup", str(args.warmup), "--scenario", args.scenario, "--task", args.task,
               "--hazards", json.dumps(hazards), "--server-pid", str(server_pid)]  # fmt: skip
    return command + (["--renamed"] if renamed else []) + (["--base", base] if base else [])


def _run(command: list[str], work: Path, label: str, simulate: bool = False) -> Counts:
    """`command` under callgrind: the counts between its two marks."""
    out, log = work / f"{label}.out", work / f"{label}.log"
    with log.open("w") as err:
        done = subprocess.run(callgrind(command, out, simulate), cwd=REPO, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=err, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{label}: exit {done.returncode}; log {log}")
    return _measured(out, log)


def _server_command(side: str, args: argparse.Namespace, port: int, traces: Path) -> list[str]:
    if side == "ours":
        return [sys.executable, "-m", "mcp_hazard", "serve", args.scenario, "--http", f"127.0.0.1:{port}",
                "--trace-dir", str(traces)]  # fmt: skip
    bare = [sys.executable, "-m", "bench.bare_server", args.scenario, "--task", args.task]
    return [*bare, "--http", f"127.0.0.1:{port}"]


def _serve_and_drive(args: argparse.Namespace, side: str, hazards: Any, renamed: bool, work: Path, label: str,
                     server_measured: bool) -> Counts:  # fmt: skip
    """A server and a client driving it; the server's count (under callgrind) or else the client's."""
    port = free_port()
    server = _server_command(side, args, port, work / f"{label}.traces")
    out, log = work / f"{label}.out", work / f"{label}.log"
    with log.open("w") as err:
        process = subprocess.Popen(callgrind(server, out, args.simulate) if server_measured else server, cwd=REPO,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
        try:
            deadline = time.monotonic() + 600
            while True:
                if process.poll() is not None:
                    raise SystemExit(f"{label}: the server exited with {process.returncode}; log {log}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"{label}: the server did not listen within 600 s") from None
                    time.sleep(0.5)
            base = f"http://127.0.0.1:{port}"
            if not server_measured:
                command = _child_command(args, "http", side, hazards, renamed, base)
                return _run(command, work, f"{label}.client", args.simulate)
            client = _child_command(args, "http", side, hazards, renamed, base, process.pid)
            subprocess.run(client, cwd=REPO, stdin=subprocess.DEVNULL, check=True, stdout=subprocess.DEVNULL)
        finally:
            stop(process, signal.SIGINT, timeout=600)
    return _measured(out, log)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.call_instructions", description=__doc__.split("\n")[0])
    parser.add_argument("--transport", default="memory,http", help="comma-separated: memory, http (default both)")
    parser.add_argument(
        "--condition",
        default="clean,transient,silent,renamed",
        help=f"comma-separated, of {', '.join(CONDITIONS)} (default clean,transient,silent,renamed)",
    )
    parser.add_argument("--calls", type=int, default=300, help="calls counted (default 300)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=30,
        help="calls made before counting: schema checks compiled, caches filled (default 30)",
    )
    parser.add_argument("--scenario", default="scenarios/travel.yaml")
    parser.add_argument("--task", default="fare-class")
    parser.add_argument("--jobs", type=int, default=2, help="callgrind runs at once (default 2)")
    parser.add_argument("--simulate", action="store_true", help="also count cache misses and mispredicted branches")
    parser.add_argument("--child", nargs=2, metavar=("TRANSPORT", "SIDE"), help=argparse.SUPPRESS)
    parser.add_argument("--hazards", default="[]", help=argparse.SUPPRESS)
    parser.add_argument("--renamed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base", default="", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()  # fmt: skip
    if args.child:
        args.transport, args.side = args.child
        _child(args)
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind and callgrind_control are not on PATH (Debian: apt-get install valgrind)")
    transports = [t for t in args.transport.split(",") if t]
    if [t for t in transports if t not in TRANSPORTS] or args.calls < 1 or args.jobs < 1 or args.warmup < 0:
        raise SystemExit(f"--transport takes {', '.join(TRANSPORTS)}; --calls, --jobs at least 1; --warmup at least 0")
    from mcp_hazard.load import load_scenario

    scenario = load_scenario(args.scenario)
    chosen = conditions(scenario, args.task, args.condition.split(","))
    print(f"callgrind: {args.calls} calls counted after {args.warmup}; {scenario.id}/{args.task}; "
          f"load {load_average()}")  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="call-instructions-"))
    sides: list[tuple[str, str, Any, bool]] = [("bare", "-", [], False)]
    sides += [("ours", c.name, c.hazards, c.name == "renamed") for c in chosen]
    jobs: dict[tuple[str, str, str], Any] = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for transport in transports:
            for side, name, hazards, renamed in sides:
                label = f"{transport}.{side}.{name}"
                if transport == "memory":
                    command = _child_command(args, "memory", side, hazards, renamed)
                    jobs[(transport, side, name)] = pool.submit(_run, command, work, label, args.simulate)
                else:
                    jobs[(transport, side, name)] = pool.submit(
                        _serve_and_drive, args, side, hazards, renamed, work, label, True
                    )
            if transport == "http":  # the client's share, against each server (ours without hazards)
                for side in ("bare", "ours"):
                    jobs[(transport, side, "client")] = pool.submit(
                        _serve_and_drive, args, side, [], False, work, f"http.{side}.client", False
                    )
        counted = {key: job.result() for key, job in jobs.items()}
    per_call = {key: counts["Ir"] / args.calls for key, counts in counted.items()}

    print(f"\n{'transport':9s} {'condition':13s} {'ours instr/call':>16s} {'bare instr/call':>16s} {'ratio':>6s}")
    for transport in transports:
        bare = per_call[(transport, "bare", "-")]
        client = 0.0
        if transport == "http":
            ours_client, bare_client = per_call[(transport, "ours", "client")], per_call[(transport, "bare", "client")]
            client = (ours_client + bare_client) / 2
            print(f"{transport:9s} {'(client)':13s} {ours_client:16,.0f} {bare_client:16,.0f}")
        for _, name, _, _ in sides[1:]:
            ours = per_call[(transport, "ours", name)]
            note = "" if transport == "memory" else f"   server alone {bare / ours:.3f}"
            print(f"{transport:9s} {name:13s} {ours + client:16,.0f} {bare + client:16,.0f} "
                  f"{(bare + client) / (ours + client):6.3f}{note}")  # fmt: skip
    if args.simulate:
        _print_simulated(transports, [name for _, name, _, _ in sides[1:]], counted, args.calls)
    print("\nratio = bare / ours, instructions per call (memory: the whole process; http: server + client, the client")
    print(f"counted once per server and averaged); load after {load_average()}; runs kept in {work}")
    if os.environ.get("CI"):
        shutil.rmtree(work, ignore_errors=True)


def _per_call(counted: dict[Any, Counts], key: tuple[str, str, str], events: tuple[str, ...], calls: int) -> float:
    return sum(counted[key].get(event, 0) for event in events) / calls


def _print_simulated(transports: list[str], names: list[str], counted: dict[Any, Counts], calls: int) -> None:
    """Per call, each side's simulated misses; over HTTP the client's count (averaged, as above) is added."""
    print(f"\n{'transport':9s} {'condition':13s} " + " ".join(f"{name + ' ours / bare':>32s}" for name in SIMULATED))
    for transport in transports:
        for name in names:
            cells = []
            for events in SIMULATED.values():
                client = 0.0
                if transport == "http":
                    client = sum(_per_call(counted, (transport, side, "client"), events, calls)
                                 for side in ("ours", "bare")) / 2  # fmt: skip
                ours = _per_call(counted, (transport, "ours", name), events, calls) + client
                bare = _per_call(counted, (transport, "bare", "-"), events, calls) + client
                cells.append(f"{ours:13,.0f} / {bare:9,.0f} ({ours - bare:+7,.0f})")
            print(f"{transport:9s} {name:13s} " + " ".join(f"{cell:>32s}" for cell in cells))


if __name__ == "__main__":
    main()

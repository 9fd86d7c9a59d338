"""Call overhead: the time of one `tools/call` through the official SDK client, mcp-hazard (tracing on) against a bare
SDK server serving the same tools, in memory, over stdio and over Streamable HTTP. bench/README.md explains it;
docs/performance.md records the figures.

    python -m bench.call_overhead [--transport memory,stdio,http] [--condition clean,armed,...] [--rounds 6]
                                  [--calls-memory 2000] [--calls-stdio 500] [--calls-http 200]
                                  [--scenario scenarios/travel.yaml] [--task fare-class] [--mode auto]

The work: the task's golden-path calls (resolved once, with the scenario's own behaviours), called in a cycle with
the same arguments, one call after another on one connection per side that is opened (and listed) before timing.
(a) mcp-hazard: in memory `open_episode("memory", ...)` (an `EpisodeRegistry` episode behind
    `single_episode_server`); over stdio `python -m mcp_hazard serve SCENARIO --task T --trace-dir D` (one process
    per condition); over HTTP one `python -m mcp_hazard serve SCENARIO --http 127.0.0.1:PORT --trace-dir D`
    process, one episode per condition made by `POST /episodes`, each reached at its `mcp_url`.
(b) bare: `bench.bare_server` serving the task's tools: `Client(bare_server(...))` in memory, `python -m
    bench.bare_server SCENARIO --task T` over stdio, `... --http 127.0.0.1:PORT` (the SDK's `streamable_http_app`)
    over HTTP. One bare connection per transport serves every condition (it has no hazards).
Rounds of K calls are interleaved a, b, b, a, ... per condition, conditions in turn within a round. Per row: the
best round's mean per call of each side, the ratio of the two (bare / mcp-hazard: 1.00 = no overhead), the median of
the paired ratios (a round and the bare round next to it), our overhead in microseconds, and CPU per call: this
process (the client; in memory also the server) and, over stdio and HTTP, the server process (from /proc).

Conditions (`--condition`, default all): clean, and "hazards on" conditions that keep every call cheap (no sleeping,
so `latency` is never used): `armed` (every kind that applies to the task except latency, as `all` picks them, each
with `after_calls=1000000`: the engine checks every call and nothing fires), `transient` (`transient_error` with
`probability=0.1` and no `times` limit: about one call in ten is refused with a 503-like isError),
`output_drift` (every result served in another form), `silent` (`silent_wrong_value`: the first reading of each
tool is wrong, the rest right), `renamed` (`spec_drift:mode=rename_tool,from_start=true`: the tool is listed as
`NAME_v2` from the start and called by that name; same results). Every result is checked: clean, armed and renamed
must equal the behaviour's result exactly; transient's errors must match the trace's `hazard_fired` count; drifted
results must differ and not be errors; and mcp-hazard's trace must hold one `tool_called` event per call. A call
that fails otherwise (an isError result, a JSON-RPC error, a wrong result) marks the row INVALID.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench.call_conditions import CONDITIONS, Call, Condition, conditions, golden_calls
from bench.processes import OPERATOR, REPO, children, cpu_of, http_process, load_average

TRANSPORTS = ("memory", "stdio", "http")


# -- one side: a connected client, its server process and its checks ------------------------------------------------


@dataclass
class Round:
    seconds: float
    cpu_s: float  # this process
    server_cpu_s: float | None  # the server process (stdio, HTTP)


@dataclass
class Side:
    server: str  # "mcp-hazard" or "bare"
    condition: str
    client: Any
    pid: int | None = None
    trace: Path | None = None
    calls: list[Call] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # the served name of each call's tool
    rounds: list[Round] = field(default_factory=list)
    made: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    first_seen: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    async def prepare(self, calls: list[Call]) -> None:
        listed = {tool.name for tool in (await self.client.list_tools()).tools}
        self.calls = calls
        for call in calls:
            if call.tool in listed:
                self.names.append(call.tool)
            elif f"{call.tool}_v2" in listed:  # spec_drift rename_tool
                self.names.append(f"{call.tool}_v2")
            else:
                raise SystemExit(f"{self.server}/{self.condition}: tool {call.tool!r} is not listed")

    async def run(self, count: int) -> None:
        """`count` calls, each checked (a cheap comparison both sides pay alike)."""
        calls, names, client = self.calls, self.names, self.client
        for i in range(count):
            index = (self.made + i) % len(calls)
            call = calls[index]
            try:
                result = await client.call_tool(names[index], call.arguments)
            except Exception as exc:  # a JSON-RPC error or a broken connection
                self._problem(f"call {self.made + i + 1}: {type(exc).__name__}: {exc}")
                continue
            text = result.content[0].text if result.content else ""
            self._check(call, bool(result.is_error), text)
        self.made += count

    def _check(self, call: Call, is_error: bool, text: str) -> None:
        kind = "bare" if self.server == "bare" else self.condition
        if is_error:
            self.outcomes["error"] += 1
            if kind != "transient":
                self._problem(f"unexpected isError: {text[:200]}")
            return
        same = text == call.text
        self.outcomes["same" if same else "changed"] += 1
        if kind == "output_drift":
            if same:
                self._problem("output_drift left a result unchanged")
        elif kind == "silent":
            if not same and call.tool in self.first_seen:
                self._problem(f"silent_wrong_value changed a later reading: {text[:200]}")
        elif not same:
            self._problem(f"result differs from the behaviour's: {text[:200]}")
        self.first_seen.add(call.tool)

    def _problem(self, text: str) -> None:
        self.outcomes["problem"] += 1
        if len(self.problems) < 3:
            self.problems.append(text)

    def check_trace(self) -> None:
        """mcp-hazard traced every call; under `transient` each refusal is a recorded firing."""
        if self.trace is None:
            return
        deadline = time.monotonic() + 10
        while not self.trace.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        events = [json.loads(line) for line in self.trace.read_text(encoding="utf-8").splitlines() if line.strip()]
        called = sum(1 for e in events if e.get("type") == "tool_called")
        if called != self.made:
            self._problem(f"trace has {called} tool_called events for {self.made} calls")
        fired = Counter(e.get("kind") for e in events if e.get("type") == "hazard_fired")
        self.outcomes.update({f"fired {kind}": n for kind, n in fired.items()})
        if self.condition == "transient" and fired["transient_error"] != self.outcomes["error"]:
            self._problem(f"{self.outcomes['error']} errors but {fired['transient_error']} transient firings")


async def timed_round(side: Side, count: int) -> Round:
    server_before = cpu_of(side.pid)
    cpu, began = time.process_time(), time.perf_counter()
    await side.run(count)
    seconds, cpu_s = time.perf_counter() - began, time.process_time() - cpu
    server_after = cpu_of(side.pid)
    server = server_after - server_before if server_before is not None and server_after is not None else None
    return Round(seconds, cpu_s, server)


# -- opening the connections -----------------------------------------------------------------------------------------


def _hazard_specs(condition: Condition) -> list[Any]:
    from mcp_hazard.scenario.hazard_spec import HazardSpec

    return [HazardSpec.model_validate(h) for h in condition.hazards]


async def open_sides(
    stack: AsyncExitStack, transport: str, scenario: Any, task: str, chosen: list[Condition], trace_dir: Path,
    mode: str,
) -> tuple[Side, list[Side]]:  # fmt: skip
    """The bare side (one for every condition) and one mcp-hazard side per condition, connected."""
    from mcp import Client, StdioServerParameters

    from bench.bare_server import bare_server
    from mcp_hazard.condition import Condition as EpisodeCondition
    from mcp_hazard.runner.transports import free_port, open_episode

    ours: list[Side] = []
    if transport == "memory":
        bare = Side("bare", "-", await stack.enter_async_context(Client(bare_server(scenario, task), mode=mode)))
        for condition in chosen:
            episode_condition = EpisodeCondition(hazards=_hazard_specs(condition))
            connected = await stack.enter_async_context(
                open_episode("memory", scenario, task, episode_condition, trace_dir, mode=mode)
            )
            ours.append(Side("mcp-hazard", condition.name, connected.client, trace=connected.trace_path))
    elif transport == "stdio":
        before = children()
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "bench.bare_server", scenario.path, "--task", task], cwd=str(REPO)
        )
        bare = Side("bare", "-", await stack.enter_async_context(Client(params, mode=mode)))
        bare.pid = next(iter(children() - before), None)
        for condition in chosen:
            before = children()
            episode_condition = EpisodeCondition(hazards=_hazard_specs(condition))
            connected = await stack.enter_async_context(
                open_episode("stdio", scenario, task, episode_condition, trace_dir, mode=mode)
            )
            side = Side("mcp-hazard", condition.name, connected.client, trace=connected.trace_path)
            side.pid = next(iter(children() - before), None)
            ours.append(side)
    else:
        port = free_port()
        command = [sys.executable, "-m", "bench.bare_server", scenario.path, "--task", task,
                   "--http", f"127.0.0.1:{port}"]  # fmt: skip
        bare_process = await stack.enter_async_context(http_process(command, f"http://127.0.0.1:{port}/mcp"))
        client = await stack.enter_async_context(Client(f"http://127.0.0.1:{port}/mcp", mode=mode))
        bare = Side("bare", "-", client, pid=bare_process.pid)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "mcp_hazard", "serve", scenario.path, "--http", f"127.0.0.1:{port}",
                   "--trace-dir", str(trace_dir)]  # fmt: skip
        process = await stack.enter_async_context(http_process(command, f"{base}/scenarios"))
        async with httpx.AsyncClient(timeout=30, headers=OPERATOR) as http:
            for condition in chosen:
                body = {"scenario": scenario.id, "task": task, "seed": 0, "hazards": condition.hazards}
                created = await http.post(f"{base}/episodes", json=body)
                if created.status_code != 201:
                    raise SystemExit(f"POST /episodes for {condition.name}: {created.status_code} {created.text}")
                episode = created.json()
                client = await stack.enter_async_context(Client(episode["mcp_url"], mode=mode))
                trace = trace_dir / f"{episode['episode_id']}.jsonl"
                ours.append(Side("mcp-hazard", condition.name, client, pid=process.pid, trace=trace))
    return bare, ours


# -- measuring ---------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    transport: str
    condition: Condition
    calls: int
    ours: Side
    bare_rounds: list[Round] = field(default_factory=list)  # the bare rounds paired with this condition's
    bare: Side | None = None


async def measure(transport: str, scenario: Any, task: str, chosen: list[Condition], calls: list[Call],
                  count: int, rounds: int, mode: str, trace_dir: Path) -> list[Row]:  # fmt: skip
    async with AsyncExitStack() as stack:
        bare, ours = await open_sides(stack, transport, scenario, task, chosen, trace_dir, mode)
        for side in [bare, *ours]:
            await side.prepare(calls)
            await side.run(max(20, count // 10))  # warm-up, untimed (checked all the same)
        rows = [Row(transport, condition, count, side, bare=bare) for condition, side in zip(chosen, ours, strict=True)]
        for index in range(rounds):
            # the rows take turns at going first, and each row's pair alternates which side goes first: no
            # condition is always measured at the same point of a round
            for row in rows[index % len(rows) :] + rows[: index % len(rows)]:
                if index % 2 == 0:
                    row.ours.rounds.append(await timed_round(row.ours, count))
                    row.bare_rounds.append(await timed_round(bare, count))
                else:
                    row.bare_rounds.append(await timed_round(bare, count))
                    row.ours.rounds.append(await timed_round(row.ours, count))
            print(f"  {transport}: round {index + 1}/{rounds} done", file=sys.stderr, flush=True)
    for side in ours:  # the connections are closed: every trace is complete
        side.check_trace()
    return rows


# -- printing ----------------------------------------------------------------------------------------------------------


def _us(seconds: float, count: int) -> float:
    return seconds / count * 1e6


def _server_us(rounds: list[Round], count: int) -> str:
    values = [r.server_cpu_s for r in rounds]
    if any(v is None for v in values):
        return "-"
    return f"{sum(v for v in values if v is not None) / (count * len(rounds)) * 1e6:.0f}"


def print_rows(rows: list[Row]) -> None:
    header = (f"{'transport':<9} {'condition':<13} {'calls':>5} {'ours µs':>9} {'bare µs':>9} {'ratio':>6} "
              f"{'paired':>6} {'+µs':>7} {'cpu ratio':>9} {'client cpu µs':>14} {'server cpu µs':>14}  "
              "check")  # fmt: skip
    print(header)
    for row in rows:
        best = min(row.ours.rounds, key=lambda r: r.seconds)
        bare_best = min(row.bare_rounds, key=lambda r: r.seconds)
        ours_us, bare_us = _us(best.seconds, row.calls), _us(bare_best.seconds, row.calls)
        paired = statistics.median(b.seconds / a.seconds for a, b in zip(row.ours.rounds, row.bare_rounds, strict=True))
        total = row.calls * len(row.ours.rounds)

        def cpu(rounds: list[Round]) -> float:
            return sum(r.cpu_s + (r.server_cpu_s or 0.0) for r in rounds)

        cpu_ratio = cpu(row.bare_rounds) / cpu(row.ours.rounds)
        client = (f"{sum(r.cpu_s for r in row.ours.rounds) / total * 1e6:.0f} / "
                  f"{sum(r.cpu_s for r in row.bare_rounds) / total * 1e6:.0f}")  # fmt: skip
        server = f"{_server_us(row.ours.rounds, row.calls)} / {_server_us(row.bare_rounds, row.calls)}"
        problems = row.ours.outcomes["problem"] + (row.bare.outcomes["problem"] if row.bare else 0)
        check = "ok" if not problems else f"INVALID ({problems} problems)"
        shown = {k: v for k, v in row.ours.outcomes.items() if k != "same" and v}
        if shown:
            check += " " + ", ".join(f"{k} {v}" for k, v in sorted(shown.items()))
        print(f"{row.transport:<9} {row.condition.name:<13} {row.calls:>5} {ours_us:9.1f} {bare_us:9.1f} "
              f"{bare_us / ours_us:6.2f} {paired:6.2f} {ours_us - bare_us:7.1f} {cpu_ratio:9.2f} {client:>14} "
              f"{server:>14}  {check} (of {row.ours.made})")  # fmt: skip
    seen: set[int] = set()
    for row in rows:
        for side in (row.ours, row.bare):
            if side is not None and side.problems and id(side) not in seen:
                seen.add(id(side))
                print(f"  {row.transport} {side.server} {side.condition}: " + " | ".join(side.problems))


def _list(choices: tuple[str, ...] | list[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [t.strip() for t in text.split(",") if t.strip()]
        bad = [n for n in names if n not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)} (comma-separated), got {text!r}")
        return names

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.call_overhead", description=__doc__.split("\n\n")[0],
                                     epilog="bench/README.md describes the conditions and the checks.")  # fmt: skip
    parser.add_argument("--transport", type=_list(TRANSPORTS), default=list(TRANSPORTS),
                        help="comma-separated: memory, stdio, http (default all three)")  # fmt: skip
    parser.add_argument("--condition", type=_list(CONDITIONS), default=CONDITIONS,
                        help=f"comma-separated: {', '.join(CONDITIONS)} (default all)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=6, help="timed rounds per side and condition (default 6)")
    parser.add_argument("--calls-memory", type=int, default=2000, help="calls per round in memory (default 2000)")
    parser.add_argument("--calls-stdio", type=int, default=500, help="calls per round over stdio (default 500)")
    parser.add_argument("--calls-http", type=int, default=200, help="calls per round over HTTP (default 200)")
    parser.add_argument("--scenario", default="scenarios/travel.yaml", help="scenario file (default travel)")
    parser.add_argument("--task", default="fare-class",
                        help="task whose golden-path calls are made, in a cycle "
                        "(default fare-class: get_fare)")  # fmt: skip
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy", "2026-07-28"],
                        help="the SDK client's protocol era (default auto)")  # fmt: skip
    args = parser.parse_args(argv)
    if min(args.rounds, args.calls_memory, args.calls_stdio, args.calls_http) < 1:
        parser.error("--rounds and --calls-* must be positive")

    from mcp_hazard.load import load_scenario
    from mcp_hazard.logs import configure_logging

    configure_logging("warning")
    os.chdir(REPO)
    scenario = load_scenario(args.scenario)
    calls = golden_calls(scenario, args.task)
    chosen = conditions(scenario, args.task, args.condition)
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} ({platform.machine()}, "
          f"{platform.system()}), mcp {version('mcp')}; load average before: {load_average()}")  # fmt: skip
    print(f"calls: {scenario.id}/{args.task}: " + ", ".join(f"{c.tool}({json.dumps(c.arguments)})" for c in calls)
          + f"; client mode {args.mode}; tracing on (temp dir)")  # fmt: skip
    for condition in chosen:
        print(f"  {condition.name:<13} {condition.what}")
    counts = {"memory": args.calls_memory, "stdio": args.calls_stdio, "http": args.calls_http}
    rows: list[Row] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-callbench-") as scratch:
        for transport in args.transport:
            trace_dir = Path(scratch) / transport
            trace_dir.mkdir()
            rows += anyio.run(measure, transport, scenario, args.task, chosen, calls, counts[transport],
                              args.rounds, args.mode, trace_dir)  # fmt: skip
    print()
    print_rows(rows)
    print()
    print("µs = mean per call of the best round (ours = mcp-hazard); ratio = bare / ours (1.00 = no overhead);")
    print("paired = median over rounds of the same ratio, each round against the bare round next to it; +µs = our")
    print("overhead per call; cpu ratio = bare / ours CPU (client + server) over all rounds; client cpu = this")
    print("process (in memory, the server too), server cpu = the server process (/proc, 10 ms ticks), per call,")
    print("ours / bare; check: every result as expected, one trace event per call (counts: results that differ")
    print("from the clean one, refusals, hazard firings in the trace)")
    print(f"measured in {time.perf_counter() - began:.0f} s; load average after: {load_average()}")
    return 1 if any(r.ours.outcomes["problem"] or (r.bare and r.bare.outcomes["problem"]) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

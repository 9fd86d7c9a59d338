"""Where a call's time goes in memory, measured in place: call_overhead's memory rounds, with clocks around the parts
of each call, so our overhead splits into what our handler adds and what the rest of the call (the SDK's server
and client, the memory streams) spends more when it runs next to our handler than next to the bare one.

    python -m bench.call_breakdown [--condition clean,transient,...] [--rounds 8] [--calls 1000]
                                   [--scenario scenarios/travel.yaml] [--task fare-class]

The clocks (`time.perf_counter`, about 0.1 µs each) wrap four places, per side and condition:
- the call as the bench's client makes it (the whole round, divided by its calls);
- the SDK's request path in the server (`ServerRunner._on_request` for `tools/call`: params check, handler, result
  made wire-ready);
- the `tools/call` handler: the bare server's, or mcp-hazard's `call_tool` (everything the episode does);
- of mcp-hazard's handler, the trace line (`TraceWriter.tool_called`) and its `write`.
The rounds are call_overhead's (same conditions, same checks, same interleaving). mcp-hazard's side carries two clocks
more than the bare side (the trace line and its write), well under a microsecond a call; the figures are means over
all rounds, not the best round, so they sit a little above call_overhead's. It reaches into the SDK's `ServerRunner`
by name: a newer SDK that renames it stops this bench with a message, not a wrong figure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio

import bench.bare_server as bare_module
import bench.call_overhead as overhead
from bench.call_conditions import CONDITIONS, conditions, golden_calls
from bench.processes import REPO, load_average

PARTS = ("call", "server request", "handler", "trace line", "trace write")


class Clocks:
    """Time spent per (side, part); the side is the round being timed."""

    def __init__(self) -> None:
        self.side = "setup"
        self.spent: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])

    def add(self, part: str, seconds: float, count: int = 1) -> None:
        entry = self.spent[(self.side, part)]
        entry[0] += seconds
        entry[1] += count

    def per_call(self, side: str, part: str) -> float | None:
        seconds, count = self.spent.get((side, part), (0.0, 0))
        return seconds / count * 1e6 if count else None


def _timed(clocks: Clocks, part: str, function: Any, *, when: Any = None) -> Any:
    async def wrapper(*args: Any) -> Any:
        if when is not None and not when(*args):
            return await function(*args)
        began = time.perf_counter()
        try:
            return await function(*args)
        finally:
            clocks.add(part, time.perf_counter() - began)

    return wrapper


def _timed_sync(clocks: Clocks, part: str, function: Any) -> Any:
    def wrapper(*args: Any) -> Any:
        began = time.perf_counter()
        try:
            return function(*args)
        finally:
            clocks.add(part, time.perf_counter() - began)

    return wrapper


def install(clocks: Clocks) -> None:
    """Put the clocks in place (this process only; the bench is its own program)."""
    from mcp.server import runner
    from mcp.server.lowlevel.server import HandlerEntry

    from mcp_hazard.server.served_episode import Episode
    from mcp_hazard.trace import writer

    if not hasattr(runner, "ServerRunner") or not hasattr(runner.ServerRunner, "_on_request"):
        raise SystemExit("this SDK has no ServerRunner._on_request to time; bench/call_breakdown.py needs updating")
    runner.ServerRunner._on_request = _timed(  # type: ignore[method-assign]
        clocks,
        "server request",
        runner.ServerRunner._on_request,
        when=lambda _self, _d, method, _p: method == "tools/call",
    )
    Episode.call_tool = _timed(clocks, "handler", Episode.call_tool)
    writer.TraceWriter.tool_called = _timed_sync(clocks, "trace line", writer.TraceWriter.tool_called)  # type: ignore[method-assign]
    writer._write_all = _timed_sync(clocks, "trace write", writer._write_all)

    made = bare_module.bare_server

    def bare_server(*args: Any, **kwargs: Any) -> Any:
        server = made(*args, **kwargs)
        entry = server._request_handlers["tools/call"]
        server._request_handlers["tools/call"] = HandlerEntry(
            entry.params_type, _timed(clocks, "handler", entry.handler)
        )
        return server

    bare_module.bare_server = bare_server
    timed_round = overhead.timed_round

    async def round_with_clocks(side: overhead.Side, count: int) -> overhead.Round:
        clocks.side = f"{side.server}:{side.condition}"
        try:
            result = await timed_round(side, count)
            clocks.add("call", result.seconds, count)
        finally:
            clocks.side = "between rounds"
        return result

    overhead.timed_round = round_with_clocks


def print_table(clocks: Clocks, chosen: list[Any]) -> None:
    header = (f"{'side':<26} {'call':>7} {'server request':>15} {'handler':>8} {'trace line':>11} {'trace write':>12} "
              f"{'rest of request':>16} {'client and streams':>19}")  # fmt: skip
    print(header)
    for side in ["bare:-", *(f"mcp-hazard:{c.name}" for c in chosen)]:
        values = {part: clocks.per_call(side, part) for part in PARTS}
        call, request, handler = values["call"], values["server request"], values["handler"]
        if call is None or request is None or handler is None:
            continue

        def cell(value: float | None, width: int) -> str:
            return f"{value:>{width}.1f}" if value is not None else f"{'-':>{width}}"

        line, write = values["trace line"], values["trace write"]
        print(f"{side:<26} {cell(call, 7)} {cell(request, 15)} {cell(handler, 8)} {cell(line, 11)} {cell(write, 12)} "
              f"{cell(request - handler, 16)} {cell(call - request, 19)}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.call_breakdown", description=__doc__.split("\n\n")[0])
    parser.add_argument("--condition", type=overhead._list(CONDITIONS), default=["clean", "transient"],
                        help=f"comma-separated: {', '.join(CONDITIONS)} (default clean,transient)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=8, help="timed rounds per side and condition (default 8)")
    parser.add_argument("--calls", type=int, default=1000, help="calls per round (default 1000)")
    parser.add_argument("--scenario", default="scenarios/travel.yaml", help="scenario file (default travel)")
    parser.add_argument(
        "--task", default="fare-class", help="task whose golden-path calls are made (default fare-class)"
    )
    args = parser.parse_args(argv)
    if min(args.rounds, args.calls) < 1:
        parser.error("--rounds and --calls must be positive")

    from mcp_hazard.load import load_scenario
    from mcp_hazard.logs import configure_logging

    configure_logging("warning")
    scenario = load_scenario(str(REPO / args.scenario))  # an absolute path stays as it is
    calls = golden_calls(scenario, args.task)
    chosen = conditions(scenario, args.task, args.condition)
    clocks = Clocks()
    install(clocks)
    print(f"load average before: {load_average()}; {args.rounds} rounds of {args.calls} calls in memory")
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-breakdown-") as scratch:
        rows = anyio.run(overhead.measure, "memory", scenario, args.task, chosen, calls, args.calls, args.rounds,
                         "auto", Path(scratch))  # fmt: skip
    problems = sum(r.ours.outcomes["problem"] + (r.bare.outcomes["problem"] if r.bare else 0) for r in rows)
    print()
    print_table(clocks, chosen)
    print()
    print("µs per call, means over every round. call: as the client sees it; server request: the SDK's path for")
    print("tools/call in the server, handler included; handler: the tools/call handler (mcp-hazard: the episode's")
    print("call_tool); trace line: building and writing the tool_called line, of which trace write is the system")
    print("call; rest of request = server request - handler; client and streams = call - server request.")
    print(f"checks: {'ok' if not problems else f'INVALID ({problems} problems)'}; load average after: {load_average()}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

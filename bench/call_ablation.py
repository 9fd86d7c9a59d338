"""What each part of mcp-hazard's clean call costs in place: the memory rounds of bench/call_overhead.py, clean, with
parts of our handler switched off one variant at a time, each variant paired against the bare SDK server.

    python -m bench.call_ablation [--without none,write,float-check,timestamp,trace-line,schema-checks]
                                  [--rounds 40] [--calls 100] [--scenario scenarios/travel.yaml] [--task fare-class]

Counted alone in a loop, each part costs a microsecond or two; between two calls of the SDK its code and data come
in cold, and it costs several times that. Switching it off and timing the whole call, interleaved with the bare
server, says what it costs where it runs. The parts (join several with `+`):
- `write`: the trace line's system call (`trace.writer._write_all`);
- `float-check`: the trace line's scan for floats orjson writes unlike `repr` (`float_forms`, as the writer calls it);
- `timestamp`: the trace line's `utc_now`, a fixed text instead;
- `trace-line`: the whole `tool_called` line, laid out, serialised and written;
- `schema-checks`: both argument checks of a call (input and output, `argument_problem`);
- `filesystem`: the trace line is written to the null device instead of the file: the system call stays, the file
  system's work goes (`write` less this is the file system's share);
- `disk`: the trace line is written to a file on tmpfs (`/dev/shm`) instead: the page cache stays, the disk's file
  system (ext4 here) goes.
A variant with a part off is not mcp-hazard (no trace, or no checks): it is only a measurement. Per variant: ours
and bare in µs per call (medians of the rounds), the median of the paired ratios (bare / ours, each round against
the bare round next to it) and the change against the variant `none` (everything on). Every result is checked
against the bare server's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from bench.call_conditions import Call, golden_calls
from bench.processes import REPO, load_average

PARTS = ("write", "float-check", "timestamp", "trace-line", "schema-checks", "filesystem", "disk")
TMPFS = "/dev/shm"
DEFAULT = "none,write,float-check,timestamp,trace-line,schema-checks,trace-line+schema-checks"


def _elsewhere(folder: str) -> Any:
    """A stand-in for the trace's write that writes the same bytes, one system call each, into a file in `folder`
    (the null device for `os.devnull`), opened for appending as the trace is, on first use; the file is removed at
    once and its descriptor keeps it until the process exits."""
    opened: list[int] = []

    def write(handle: Any, line: bytes) -> None:
        if not opened and folder == os.devnull:
            opened.append(os.open(os.devnull, os.O_WRONLY | os.O_APPEND))
        elif not opened:
            descriptor, path = tempfile.mkstemp(prefix="mcp-hazard-ablation-", dir=folder)
            os.close(descriptor)
            opened.append(os.open(path, os.O_WRONLY | os.O_APPEND))
            os.unlink(path)
        os.write(opened[0], line)

    return write


def _switches() -> dict[str, tuple[Any, str, Any]]:
    """Each part: the object, the attribute that holds it, and what stands in for it when it is off."""
    from mcp_hazard.server import call_path
    from mcp_hazard.trace import writer

    return {
        "filesystem": (writer, "_write_all", _elsewhere(os.devnull)),
        "disk": (writer, "_write_all", _elsewhere(TMPFS)),
        "write": (writer, "_write_all", lambda handle, line: None),
        "float-check": (writer, "float_forms", lambda text: False),
        # not `00.000000`: the float check would take `0.0000` for a float and send every line the exact way
        "timestamp": (writer, "utc_now", lambda: "2026-01-01T12:34:56.123456Z"),
        "trace-line": (writer.TraceWriter, "tool_called", lambda self, *fields: None),
        "schema-checks": (call_path, "argument_problem", lambda schema, value: None),
    }


def _variants(text: str) -> list[list[str]]:
    variants = []
    for variant in text.split(","):
        parts = [] if variant == "none" else variant.split("+")
        unknown = [part for part in parts if part not in PARTS]
        if unknown or not variant:
            raise SystemExit(f"--without: unknown part {unknown or [variant]}; parts: none, {', '.join(PARTS)}")
        if len({"write", "filesystem", "disk"} & set(parts)) > 1:
            raise SystemExit(f"--without {variant}: write, filesystem and disk each replace the write; pick one")
        if "disk" in parts and not os.path.isdir(TMPFS):
            raise SystemExit(f"--without disk: {TMPFS} is not here (it needs a tmpfs there, as Linux has)")
        variants.append(parts)
    return variants


async def _round(client: Any, calls: list[Call], count: int, problems: list[str]) -> float:
    began = time.perf_counter()
    for number in range(count):
        call = calls[number % len(calls)]
        result = await client.call_tool(call.tool, call.arguments)
        if result.is_error or result.content[0].text != call.text:
            problems.append(f"{call.tool}: {result.content[0].text[:80] if result.content else result}")
    return (time.perf_counter() - began) / count


async def measure(args: argparse.Namespace, variants: list[list[str]]) -> list[tuple[str, float, float, float]]:
    from mcp import Client

    from bench.bare_server import bare_server
    from mcp_hazard.condition import Condition
    from mcp_hazard.load import load_scenario
    from mcp_hazard.runner.transports import open_episode

    scenario = load_scenario(str(REPO / args.scenario))
    calls = golden_calls(scenario, args.task)
    switches = _switches()
    kept = {name: getattr(owner, attribute) for name, (owner, attribute, _) in switches.items()}
    rows: list[tuple[str, float, float, float]] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-ablation-") as traces:
        async with AsyncExitStack() as stack:
            bare = await stack.enter_async_context(Client(bare_server(scenario, args.task)))
            connected = await stack.enter_async_context(
                open_episode("memory", scenario, args.task, Condition(), Path(traces))
            )
            ours = connected.client
            for client in (bare, ours):
                await client.list_tools()
                await _round(client, calls, args.calls, problems)  # schema checks compiled, caches filled
            try:
                for parts in variants:
                    for name, (owner, attribute, _) in switches.items():
                        setattr(owner, attribute, kept[name])
                    for part in parts:
                        owner, attribute, stand_in = switches[part]
                        setattr(owner, attribute, stand_in)
                    times: dict[str, list[float]] = {"ours": [], "bare": []}
                    for number in range(args.rounds):  # a, b, b, a, ...: neither side always goes first
                        order = [("ours", ours), ("bare", bare)][:: 1 if number % 2 else -1]
                        for side, client in order:
                            times[side].append(await _round(client, calls, args.calls, problems))
                    paired = statistics.median(b / o for o, b in zip(times["ours"], times["bare"], strict=True))
                    label = "+".join(parts) or "none"
                    rows.append((label, statistics.median(times["ours"]), statistics.median(times["bare"]), paired))
                    print(f"  {label}: done", file=sys.stderr, flush=True)
            finally:
                for name, (owner, attribute, _) in switches.items():
                    setattr(owner, attribute, kept[name])
    if problems:
        raise SystemExit(f"INVALID: {len(problems)} calls answered unlike the bare server, first: {problems[0]}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.call_ablation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--without", default=DEFAULT, help=f"comma-separated variants (default {DEFAULT})")
    parser.add_argument("--rounds", type=int, default=40, help="rounds per side and variant (default 40)")
    parser.add_argument("--calls", type=int, default=100, help="calls per round (default 100)")
    parser.add_argument("--scenario", default="scenarios/travel.yaml", help="scenario file (default travel)")
    parser.add_argument("--task", default="fare-class", help="task whose golden-path calls are made")
    args = parser.parse_args(argv)
    if min(args.rounds, args.calls) < 1:
        parser.error("--rounds and --calls must be positive")
    variants = _variants(args.without)

    from mcp_hazard.logs import configure_logging

    configure_logging("warning")
    print(f"load average before: {load_average()}; {args.rounds} rounds of {args.calls} calls per side and variant")
    rows = anyio.run(measure, args, variants)
    full = next((paired for label, _, _, paired in rows if label == "none"), None)
    print(f"\n{'without':<28} {'ours µs':>8} {'bare µs':>8} {'paired':>7} {'change':>7}")
    for label, ours, bare, paired in rows:
        change = f"{paired - full:+.3f}" if full is not None else "-"
        print(f"{label:<28} {ours * 1e6:8.1f} {bare * 1e6:8.1f} {paired:7.3f} {change:>7}")
    print("\nµs: median of the rounds' mean per call; paired: median of bare / ours, round by round; change: against")
    print(f"`none` (everything on). Every call answered as the bare server does. Load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

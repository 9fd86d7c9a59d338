"""Concurrent HTTP episodes: 64 agents at once against one `mcp-hazard serve --http` process, and the same client code
against one bare SDK HTTP server. bench/README.md explains it; docs/performance.md records the figures.

    python -m bench.concurrent_http [--episodes 64] [--rounds 5] [--create url,post] [--mode mixed]
                                    [--scenario scenarios/travel.yaml]

Each episode does what an agent does, with the official SDK client over real HTTP: connect, `tools/list`, the task's
golden-path `tools/call`s (arguments resolved once from the scenario's behaviours, every result checked against the
behaviour's), `submit_answer` with the right answer, close. The tasks of the scenario are taken in turn, seeds 0,
1, 2, ...; the protocol era alternates (`--mode mixed`: even episodes 2026-07-28, odd ones the legacy handshake with
a session) unless one is named. All `--episodes` of a round start at once.

The servers are subprocesses, so the client's CPU (this process) and the server's do not mix:
(a) `python -m mcp_hazard serve SCENARIO --http 127.0.0.1:PORT --trace-dir D`, one process for the whole run; each
    episode is made either by its first-use URL `/episodes/ID/mcp?scenario=..&task=..&seed=..` (`url`: no extra
    request) or by `POST /episodes` before connecting to its `mcp_url` (`post`: one more request).
(b) `python -m bench.bare_server SCENARIO --http 127.0.0.1:PORT`: one uvicorn process with SDK session managers
    as `streamable_http_app` makes them, one per task at `/tasks/TASK/mcp` (each lists the task's tools, as
    mcp-hazard lists them), 64 sessions at once.
The SDK clients share one HTTP client (`streamable_http_client(url, http_client=...)`): `Client(url)` makes its own
per connection, whose TLS set-up costs about 70 ms of CPU here, and in one client process that would bound the rate
for both servers alike (`--client-per-episode` measures it that way).
Rounds alternate a, b, b, a, ... (every `--create` way is its own (a)) after one untimed round of each. Per row:
episodes/s of the best round, the ratio ours / bare in episodes/s (1.00 = no overhead; goal >= 0.9), the median of
the paired ratios, the server's CPU per episode (from /proc, 10 ms ticks) and its ratio, this process's CPU per
episode, and errors: an episode that raises, gets an isError or a wrong result counts as one (must be 0). At the
end every mcp-hazard episode must have a trace ending in an answer.
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
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx

from bench.call_conditions import Call, golden_calls
from bench.processes import OPERATOR, TOKEN, cpu_of, http_process, load_average

REPO = Path(__file__).resolve().parents[1]
CREATE = ("url", "post")


@dataclass(frozen=True)
class Plan:
    task: str
    calls: list[Call]
    answer: str


def plans(scenario: Any) -> list[Plan]:
    """Every task's golden calls and its answer (as the golden agent would submit it)."""
    from mcp_hazard.scenario.expressions import render

    found = []
    for task in scenario.model.tasks:
        calls = golden_calls(scenario, task.id)
        results = {step.id: call.structured if call.structured is not None else json.loads(call.text)
                   for step, call in zip(task.golden_path.steps, calls, strict=True)}  # fmt: skip
        answer = render(task.golden_path.answer, results)
        found.append(Plan(task.id, calls, answer if isinstance(answer, str) else json.dumps(answer)))
    return found


@dataclass
class Server:
    name: str  # "mcp-hazard (url)", "mcp-hazard (post)", "bare"
    base: str
    pid: int
    create: str | None  # None: bare
    seconds: list[float] = field(default_factory=list)
    server_cpu: list[float] = field(default_factory=list)
    client_cpu: list[float] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    episode_ids: list[str] = field(default_factory=list)


def _text(result: Any) -> str:
    """The text of a result's first block ("" when it has none or it is not text)."""
    block = result.content[0] if result.content else None
    return str(getattr(block, "text", ""))


async def one_episode(server: Server, http: httpx.AsyncClient, shared: Any, scenario: str, plan: Plan, n: int,
                      mode: str, tag: str) -> None:  # fmt: skip
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    if server.create is None:
        url = f"{server.base}/tasks/{plan.task}/mcp"
    elif server.create == "url":
        episode_id = f"{tag}-{n}"
        query = urlencode({"scenario": scenario, "task": plan.task, "seed": n, "token": TOKEN})
        url = f"{server.base}/episodes/{episode_id}/mcp?{query}"
        server.episode_ids.append(episode_id)
    else:
        created = await http.post(f"{server.base}/episodes", json={"scenario": scenario, "task": plan.task, "seed": n})
        created.raise_for_status()
        url = created.json()["mcp_url"]
        server.episode_ids.append(created.json()["episode_id"])
    target = url if shared is None else streamable_http_client(url, http_client=shared)
    async with Client(target, mode=mode) as client:
        await client.list_tools()
        for call in plan.calls:
            result = await client.call_tool(call.tool, call.arguments)
            text = _text(result)
            if result.is_error or text != call.text:
                raise AssertionError(f"{call.tool}: {'isError' if result.is_error else 'wrong result'}: {text[:200]}")
        result = await client.call_tool("submit_answer", {"answer": plan.answer})
        if result.is_error:
            raise AssertionError(f"submit_answer refused: {_text(result)[:200]}")


async def one_round(server: Server, scenario: str, all_plans: list[Plan], args: argparse.Namespace, tag: str) -> None:
    from mcp.shared._httpx_utils import create_mcp_http_client

    errors = 0
    mode = args.mode

    async def guarded(http: httpx.AsyncClient, shared: Any, n: int) -> None:
        nonlocal errors
        era = mode if mode != "mixed" else ("2026-07-28" if n % 2 == 0 else "legacy")
        try:
            await one_episode(server, http, shared, scenario, all_plans[n % len(all_plans)], n, era, tag)
        except Exception as exc:
            errors += 1
            if len(server.problems) < 3:
                server.problems.append(f"episode {n}: {type(exc).__name__}: {exc}"[:300])

    server_before = cpu_of(server.pid) or 0.0
    cpu, began = time.process_time(), time.perf_counter()
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=60, headers=OPERATOR))
        shared = None if args.client_per_episode else await stack.enter_async_context(create_mcp_http_client())
        group = await stack.enter_async_context(anyio.create_task_group())
        for n in range(args.episodes):
            group.start_soon(guarded, http, shared, n)
    server.seconds.append(time.perf_counter() - began)
    server.client_cpu.append(time.process_time() - cpu)
    server.server_cpu.append((cpu_of(server.pid) or 0.0) - server_before)
    server.errors.append(errors)


def check_traces(server: Server, trace_dir: Path) -> int:
    """Every episode of mcp-hazard has a trace with its answer; the number of those that do not."""
    missing = 0
    for episode_id in server.episode_ids:
        path = trace_dir / f"{episode_id}.jsonl"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if '"type":"answer_submitted"' not in text.replace(" ", ""):
            missing += 1
            if len(server.problems) < 3:
                server.problems.append(f"trace of {episode_id}: no answer_submitted")
    return missing


async def run(args: argparse.Namespace, scenario: Any, all_plans: list[Plan], trace_dir: Path) -> list[Server]:
    from mcp_hazard.runner.transports import free_port

    async with AsyncExitStack() as stack:
        port = free_port()
        command = [sys.executable, "-m", "bench.bare_server", scenario.path, "--http", f"127.0.0.1:{port}"]
        process = await stack.enter_async_context(http_process(command, f"http://127.0.0.1:{port}/mcp"))
        bare = Server("bare", f"http://127.0.0.1:{port}", process.pid, None)
        port = free_port()
        command = [sys.executable, "-m", "mcp_hazard", "serve", scenario.path, "--http", f"127.0.0.1:{port}",
                   "--trace-dir", str(trace_dir)]  # fmt: skip
        process = await stack.enter_async_context(http_process(command, f"http://127.0.0.1:{port}/scenarios"))
        ours = [Server(f"mcp-hazard ({how})", f"http://127.0.0.1:{port}", process.pid, how) for how in args.create]
        for server in [*ours, bare]:  # untimed warm-up round, not counted or checked
            await one_round(server, scenario.id, all_plans, args, f"warm-{server.create}")
            for figures in (server.seconds, server.server_cpu, server.client_cpu, server.errors):
                figures.clear()
            server.episode_ids.clear()
        for index in range(args.rounds):
            order = [*ours, bare] if index % 2 == 0 else [bare, *reversed(ours)]
            for server in order:
                await one_round(server, scenario.id, all_plans, args, f"r{index}-{server.create}")
            print(f"  round {index + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    for server in ours:
        server.errors.append(check_traces(server, trace_dir))
    return [*ours, bare]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrent_http", description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=64, help="episodes at once per round (default 64)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of each server (default 5)")
    parser.add_argument("--create", default="url,post",
                        help="how mcp-hazard episodes are made, comma-separated: url (first-use URL), post "
                        "(POST /episodes) (default both, each its own row)")  # fmt: skip
    parser.add_argument("--mode", default="mixed", choices=["mixed", "auto", "legacy", "2026-07-28"],
                        help="protocol era of the clients (default mixed: alternating modern and legacy)")  # fmt: skip
    parser.add_argument("--scenario", default="scenarios/travel.yaml", help="scenario file (default travel)")
    parser.add_argument("--client-per-episode", action="store_true",
                        help="each episode's SDK client makes its own HTTP client, as `Client(url)` does (about "
                        "70 ms of client CPU each here, which then bounds the rate); default: one shared")  # fmt: skip
    args = parser.parse_args(argv)
    args.create = [c.strip() for c in args.create.split(",") if c.strip()]
    if not args.create or any(c not in CREATE for c in args.create):
        parser.error("--create takes url, post or url,post")
    if min(args.episodes, args.rounds) < 1:
        parser.error("--episodes and --rounds must be positive")

    from mcp_hazard.load import load_scenario
    from mcp_hazard.logs import configure_logging

    configure_logging("warning")
    os.chdir(REPO)
    scenario = load_scenario(args.scenario)
    all_plans = plans(scenario)
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} ({platform.machine()}, "
          f"{platform.system()}); load average before: {load_average()}")  # fmt: skip
    print(f"{args.episodes} episodes at once, {scenario.id}'s {len(all_plans)} tasks in turn "
          f"({sum(len(p.calls) for p in all_plans) / len(all_plans):.1f} tool calls per task on average), "
          f"client era {args.mode}, "
          f"{'an HTTP client per episode' if args.client_per_episode else 'one shared HTTP client'}; "
          "tracing on (temp dir)")  # fmt: skip
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-httpbench-") as scratch:
        servers = anyio.run(run, args, scenario, all_plans, Path(scratch))
    bare = servers[-1]
    bare_best = min(bare.seconds)
    print()
    print(f"{'server':<19} {'best s':>7} {'eps/s':>7} {'ratio':>6} {'paired':>6} {'server cpu ms/ep':>16} "
          f"{'cpu ratio':>9} {'client cpu ms/ep':>16} {'errors':>6}")  # fmt: skip
    for server in servers:
        best = min(server.seconds)
        per_episode = args.episodes * len(server.seconds)
        server_cpu = sum(server.server_cpu) / per_episode * 1000
        client_cpu = sum(server.client_cpu) / per_episode * 1000
        if server is bare:
            ratio = paired = cpu_ratio = "-"
        else:
            ratio = f"{bare_best / best:.2f}"
            paired = f"{statistics.median(b / a for a, b in zip(server.seconds, bare.seconds, strict=True)):.2f}"
            cpu_ratio = f"{sum(bare.server_cpu) / sum(server.server_cpu):.2f}"
        print(f"{server.name:<19} {best:7.3f} {args.episodes / best:7.1f} {ratio:>6} {paired:>6} {server_cpu:16.2f} "
              f"{cpu_ratio:>9} {client_cpu:16.2f} {sum(server.errors):>6}")  # fmt: skip
    for server in servers:
        for problem in server.problems:
            print(f"  {server.name}: {problem}")
    print()
    print("ratio = best eps/s ours / best eps/s bare (1.00 = no overhead); paired = median over rounds of the same")
    print("ratio, each round against the bare round next to it; server cpu = the server process per episode (/proc);")
    print("cpu ratio = bare / ours server CPU; client cpu = this process (the SDK clients); errors = episodes that")
    print("raised or got an isError or wrong result, plus mcp-hazard episodes without an answer in their trace")
    print(f"measured in {time.perf_counter() - began:.0f} s; load average after: {load_average()}")
    return 1 if any(sum(s.errors) for s in servers) else 0


if __name__ == "__main__":
    sys.exit(main())

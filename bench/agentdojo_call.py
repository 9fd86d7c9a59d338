"""Per-call time of an AgentDojo tool through mcp-hazard (an `agentdojo:SUITE` episode, tracing on, clean condition)
against the same function run by AgentDojo's own `FunctionsRuntime` behind a bare SDK server, both in memory through
the official SDK client. docs/performance.md records the figures.

    python -m bench.agentdojo_call [--suite banking] [--task user_task_1] [--rounds 8] [--calls 300]
                                   [--transport memory|stdio|http]

The work: the task's ground-truth calls that only read (facts table: `effect: read`), so repeating them changes
nothing, called in a cycle with the same arguments on one connection per side, opened and listed before timing.
(a) mcp-hazard: `open_episode(TRANSPORT, ...)` on the suite (over stdio `mcp-hazard serve agentdojo:SUITE --task T`),
    the episode running AgentDojo's function on its own environment and writing its trace; over HTTP
    `mcp-hazard serve agentdojo:SUITE --http 127.0.0.1:PORT` and one episode made by `POST /episodes`.
(b) bare: a low-level SDK server whose `tools/call` runs `FunctionsRuntime.run_function` on one environment and
    returns the result as JSON text (as mcp-hazard serves it), listing the same tools; no validation, no hazards
    engine, no trace. Over stdio it is this module with `--serve-bare`, in its own process; over HTTP the same with
    `--http HOST:PORT`, the SDK's own `streamable_http_app` run by uvicorn (as bench/bare_server.py serves HTTP).
Rounds of K calls are interleaved a, b, b, a, ...; per side the best round's mean per call, the ratio of the two
(bare / mcp-hazard: 1.00 = no overhead) and the median of the paired ratios. Every result of both sides must be the
same JSON, else the run stops.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
from mcp import Client
from mcp.server import Server, ServerRequestContext

from bench.processes import OPERATOR, REPO, http_process, load_average
from mcp_hazard.agentdojo.build_suite import load_suite
from mcp_hazard.agentdojo.library import to_json
from mcp_hazard.agentdojo.source_names import parse
from mcp_hazard.agentdojo.suite_scenario import LoadedSuite
from mcp_hazard.condition import Condition
from mcp_hazard.runner.transports import free_port, open_episode


def bare_agentdojo_server(loaded: LoadedSuite, task_id: str) -> Server[Any]:
    """AgentDojo's FunctionsRuntime behind the SDK's low-level server: the suite's tools, one environment."""
    suite = loaded.suite
    assert suite is not None
    environment = suite.task_environment(suite.user_tasks[task_id])
    runtime = suite.runtime
    listing = types.ListToolsResult(
        tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in loaded.model.tools
        ]
    )

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        result, error = runtime.run_function(environment, params.name, params.arguments or {})
        if error is not None:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(error))], is_error=True)
        value = to_json(result)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=True, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("bare-agentdojo", version="0", on_list_tools=list_tools, on_call_tool=call_tool)


def read_calls(loaded: LoadedSuite, task_id: str) -> list[tuple[str, dict[str, Any]]]:
    assert loaded.suite is not None and loaded.facts is not None
    calls, _ = loaded.suite.ground_truth(loaded.suite.user_tasks[task_id])
    reads = [(name, args) for name, args in calls if loaded.facts.model.tools[name].effect == "read"]
    if not reads:
        raise SystemExit(f"{loaded.id}/{task_id}: its ground truth makes no read call to time")
    return reads


def _canonical(text: str) -> str:
    try:
        return json.dumps(json.loads(text), sort_keys=True)
    except ValueError:  # a tool that returns text (slack's, some of workspace's)
        return text


async def _round(client: Client, calls: list[tuple[str, dict[str, Any]]], count: int, seen: dict[str, str]) -> float:
    started = time.perf_counter()
    for index in range(count):
        name, arguments = calls[index % len(calls)]
        result = await client.call_tool(name, arguments)
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise SystemExit(f"{name}: an error: {text[:200]}")
        value = _canonical(text)
        if seen.setdefault(f"{name}{json.dumps(arguments, sort_keys=True)}", value) != value:
            raise SystemExit(f"{name}: the two sides answered differently")
    return (time.perf_counter() - started) / count


async def measure(suite_name: str, task_id: str, rounds: int, count: int, transport: str) -> dict[str, Any]:
    loaded = load_suite(parse(f"agentdojo:{suite_name}")[0])
    calls = read_calls(loaded, task_id)
    ours: list[float] = []
    bare: list[float] = []
    seen: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as traces:
        async with AsyncExitStack() as stack:
            mine = await _ours(stack, loaded, suite_name, task_id, transport, Path(traces))
            plain = await stack.enter_async_context(await _bare(stack, loaded, suite_name, task_id, transport))
            await mine.list_tools()
            await plain.list_tools()
            await _round(mine, calls, 20, seen)  # warm-up, and the results both sides must give
            await _round(plain, calls, 20, seen)
            for index in range(rounds):
                order = [(mine, ours), (plain, bare)]
                for client, times in order if index % 2 == 0 else order[::-1]:
                    times.append(await _round(client, calls, count, seen))
    paired = [b / a for a, b in zip(ours, bare, strict=True)]
    return {
        "transport": transport, "suite": suite_name, "task": task_id, "tools": sorted({name for name, _ in calls}),
        "calls_per_round": count,
        "rounds": rounds, "mcp_hazard_us": round(min(ours) * 1e6, 1), "bare_us": round(min(bare) * 1e6, 1),
        "ratio": round(min(bare) / min(ours), 3), "median_paired_ratio": round(statistics.median(paired), 3),
        "load_average": load_average(),
    }  # fmt: skip


async def _ours(
    stack: AsyncExitStack, loaded: LoadedSuite, suite_name: str, task_id: str, transport: str, traces: Path
) -> Client:
    """mcp-hazard's side: an episode of the suite's task, connected and ready."""
    if transport != "http":
        connected = await stack.enter_async_context(
            open_episode(transport, loaded, task_id, Condition(seed=0), traces)  # type: ignore[arg-type]
        )
        return connected.client
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "mcp_hazard", "serve", f"agentdojo:{suite_name}", "--http",
               f"127.0.0.1:{port}", "--trace-dir", str(traces)]  # fmt: skip
    await stack.enter_async_context(http_process(command, f"{base}/scenarios"))
    async with httpx.AsyncClient(timeout=60, headers=OPERATOR) as http:
        created = await http.post(f"{base}/episodes", json={"scenario": loaded.id, "task": task_id, "seed": 0})
    if created.status_code != 201:
        raise SystemExit(f"POST /episodes: {created.status_code} {created.text}")
    return await stack.enter_async_context(Client(created.json()["mcp_url"]))


async def _bare(stack: AsyncExitStack, loaded: LoadedSuite, suite_name: str, task_id: str, transport: str) -> Client:
    """The bare side's client (not yet entered): in process, over stdio or over HTTP."""
    serving = ["-m", "bench.agentdojo_call", "--serve-bare", "--suite", suite_name, "--task", task_id]
    if transport == "memory":
        return Client(bare_agentdojo_server(loaded, task_id))
    if transport == "stdio":
        from mcp import StdioServerParameters

        return Client(StdioServerParameters(command=sys.executable, cwd=str(REPO), args=serving))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    await stack.enter_async_context(http_process([sys.executable, *serving, "--http", f"127.0.0.1:{port}"], url))
    return Client(url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agentdojo_call", description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="banking")
    parser.add_argument("--task", default="user_task_1")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--transport", choices=("memory", "stdio", "http"), default="memory")
    parser.add_argument("--serve-bare", action="store_true", help="serve the bare side over stdio (the bench's own)")
    parser.add_argument("--http", metavar="HOST:PORT", help="with --serve-bare: serve Streamable HTTP at /mcp")
    args = parser.parse_args(argv)
    if args.serve_bare:
        from bench.bare_server import serve_stdio

        loaded = load_suite(parse(f"agentdojo:{args.suite}")[0])
        server = bare_agentdojo_server(loaded, args.task)
        if args.http:
            import uvicorn

            host, _sep, port = args.http.rpartition(":")
            uvicorn.run(server.streamable_http_app(host=host), host=host, port=int(port), log_level="warning")
        else:
            anyio.run(serve_stdio, server)
        return 0
    row = anyio.run(measure, args.suite, args.task, args.rounds, args.calls, args.transport)
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A bare MCP server for the runner-throughput bench: the same tools as an mcp-hazard scenario, nothing else.

It is the baseline that `bench/runner_throughput.py` compares mcp-hazard with. It lists the scenario's tools (or a
task's tools) exactly as mcp-hazard serves them in the clean condition (name, title, description, input and output
schema, annotations), plus a `submit_answer` tool, and answers each call with the scenario's own deterministic
behaviour (`run_behaviour`). It does none of what mcp-hazard does per call: no argument validation, no hazards engine,
no output-schema check, no trace, no episode state. `submit_answer` only acknowledges.

    python -m bench.bare_server SCENARIO.yaml [--task TASK]     # serve over stdio
    python -m bench.bare_server SCENARIO.yaml [--task TASK] --http 127.0.0.1:PORT   # Streamable HTTP at /mcp
                                                                 # (without --task also /tasks/TASK/mcp)
    from bench.bare_server import bare_server                   # in-process: Client(bare_server(scenario))

The stdio program imports only the SDK, mcp-hazard's scenario loader and its submit tool (plain values), so its
start-up cost is the floor for `mcp-hazard serve` as well. Over HTTP it is the SDK's own `streamable_http_app` (one
endpoint, `/mcp`, sessions as the SDK keeps them, DNS-rebinding protection on for 127.0.0.1) run by uvicorn, so many
clients share one server as they share one `mcp-hazard serve --http`; without `--task`, each task's tools are also
served at `/tasks/TASK/mcp`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions

from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import ToolSpec
from mcp_hazard.server.submit import ANSWER_RECEIVED, SUBMIT_DESCRIPTION, SUBMIT_SCHEMA, SUBMIT_TOOL


class _ListChangedServer(Server[Any]):
    """Advertises tools.listChanged like mcp-hazard's server, so both handshakes carry the same capabilities."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


def _tool(spec: ToolSpec) -> types.Tool:
    annotations = None
    if spec.annotations is not None:
        annotations = types.ToolAnnotations(**spec.annotations.model_dump(exclude_none=True))
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=annotations,
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def bare_server(scenario: LoadedScenario, task: str | None = None) -> Server[Any]:
    """A low-level SDK server serving `scenario`'s tools (those of `task` when given) with their plain behaviours."""
    model = scenario.model
    if task is not None:
        found = model.task(task)
        if found is None:
            raise ValueError(f"scenario {scenario.id!r} has no task {task!r}")
        specs = model.task_tools(found)
    else:
        specs = list(model.tools)
    by_name = {spec.name: spec for spec in specs}
    listing = types.ListToolsResult(
        tools=[
            *(_tool(spec) for spec in specs),
            types.Tool(name=SUBMIT_TOOL, description=SUBMIT_DESCRIPTION, input_schema=SUBMIT_SCHEMA),
        ]
    )

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == SUBMIT_TOOL:
            return types.CallToolResult(content=[types.TextContent(type="text", text=ANSWER_RECEIVED)])
        spec = by_name.get(params.name)
        if spec is None:
            return _error(f"Unknown tool '{params.name}'.")
        try:
            outcome = run_behaviour(spec, arguments)
        except Exception as exc:  # the same contract as mcp-hazard: a fault is an isError result
            return _error(f"Internal error in tool '{params.name}': {type(exc).__name__}")
        if not outcome.ok:
            return _error(str(outcome.error))
        result = outcome.result
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=2)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=result if isinstance(result, dict) else None,
        )

    return _ListChangedServer(
        "bare-sdk-server",
        version="0",
        get_tool_input_schema=lambda name: None,  # as mcp-hazard: no tools/list before each call on modern HTTP
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_app(scenario: LoadedScenario, task: str | None, host: str) -> Any:
    """With a task: the SDK's own `streamable_http_app` of that task's server, at /mcp. Without: every tool of the
    scenario at /mcp, and each task's tools at /tasks/TASK/mcp (so clients of different tasks list what mcp-hazard
    lists them), each path its own SDK session manager with the settings `streamable_http_app` uses."""
    if task is not None:
        return bare_server(scenario, task).streamable_http_app(host=host)
    from contextlib import AsyncExitStack, asynccontextmanager

    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    security = TransportSecuritySettings(  # what streamable_http_app sets for 127.0.0.1
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    servers = {"/mcp": bare_server(scenario)}
    servers.update({f"/tasks/{t.id}/mcp": bare_server(scenario, t.id) for t in scenario.model.tasks})
    managers = {path: StreamableHTTPSessionManager(app=s, security_settings=security) for path, s in servers.items()}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with AsyncExitStack() as stack:
            for manager in managers.values():
                await stack.enter_async_context(manager.run())
            yield

    routes = [Route(path, endpoint=StreamableHTTPASGIApp(manager)) for path, manager in managers.items()]
    return Starlette(routes=routes, lifespan=lifespan)


def serve_http(scenario: LoadedScenario, task: str | None, host: str, port: int) -> None:
    """Streamable HTTP with the SDK's defaults (SSE responses, sessions), run by uvicorn."""
    import uvicorn

    app = http_app(scenario, task, host)
    paths = "/mcp" if task is not None else "/mcp and /tasks/TASK/mcp"
    print(f"bare-sdk-server: serving http://{host}:{port} ({paths})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _host_port(text: str) -> tuple[str, int]:
    host, _sep, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bare_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", help="a scenario file (YAML)")
    parser.add_argument("--task", help="serve only this task's tools (default: every tool of the scenario)")
    parser.add_argument("--http", type=_host_port, metavar="HOST:PORT",
                        help="serve Streamable HTTP at http://HOST:PORT/mcp (and, without --task, each task's "
                        "tools at /tasks/TASK/mcp) instead of stdio")  # fmt: skip
    args = parser.parse_args(argv)
    scenario = load_scenario(args.scenario)
    if args.http:
        serve_http(scenario, args.task, *args.http)
    else:
        anyio.run(serve_stdio, bare_server(scenario, args.task))
    return 0


if __name__ == "__main__":
    sys.exit(main())

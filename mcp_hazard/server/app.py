"""The MCP server: low-level SDK handlers that find the request's episode and let it answer.

Handlers hold no state of their own. A `resolve` function maps each request to its episode (the one episode of a
stdio process, or the episode named in the HTTP path), so one `Server` object serves any number of episodes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial, wraps
from typing import Any, TypeVar

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hazard import __version__
from mcp_hazard.logs import log
from mcp_hazard.server.call_path import Notifier
from mcp_hazard.server.results import error_result
from mcp_hazard.server.served_episode import TASK_PROMPT_NAME, Episode
from mcp_hazard.trace.storage import StorageError

Resolver = Callable[[ServerRequestContext[Any, Any]], Episode]

INSTRUCTIONS = (
    "This server plays a tool environment for one task. Read the task from the prompt named 'task' "
    "(or the resource listed), use the tools to find the answer, then call submit_answer once."
)


class EpisodeNotFound(MCPError):
    def __init__(self, message: str) -> None:
        super().__init__(types.INVALID_PARAMS, message)


class HazardServer(Server[Any]):
    """Advertises tools.listChanged in the handshake era: the HTTP and in-memory paths call
    create_initialization_options() with no arguments, which would otherwise say false."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


async def _announce(ctx: ServerRequestContext[Any, Any], episode: Episode) -> bool:
    """Announce a changed tool list in the request's era; False when the client could not be told."""
    try:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await episode.bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_tool_list_changed()
    except Exception:  # a client that went away must not turn the call into a protocol error
        log.warning("could not announce list_changed", episode=episode.id)
        return False
    return True


def notifier(ctx: ServerRequestContext[Any, Any], episode: Episode) -> Notifier:
    """What a call uses to announce a changed list; made for every call and seldom used, so a partial rather than a
    closure: making one runs no Python."""
    return partial(_announce, ctx, episode)


def unrecorded(failure: StorageError) -> MCPError:
    """What a client is told when its episode's trace cannot be written: one JSON-RPC error with the system's
    reason, never the trace's path (that is the operator's, logged once by the episode)."""
    return MCPError(types.INTERNAL_ERROR, f"the server cannot record this episode ({failure.reason}); it is over")


_Result = TypeVar("_Result")


def recorded(
    handler: Callable[[ServerRequestContext[Any, Any], Any], Awaitable[_Result]],
) -> Callable[[ServerRequestContext[Any, Any], Any], Awaitable[_Result]]:
    """A handler whose episode's trace may fail to take a line: the request gets `unrecorded`, never a traceback."""

    @wraps(handler)
    async def answer(ctx: ServerRequestContext[Any, Any], params: Any) -> _Result:
        try:
            return await handler(ctx, params)
        except StorageError as exc:
            raise unrecorded(exc) from None

    return answer


def build_server(resolve: Resolver) -> Server[Any]:
    """A low-level SDK server whose every handler delegates to the episode `resolve` picks for the request."""
    handlers = _EpisodeHandlers(resolve)
    return HazardServer(
        "mcp-hazard",
        version=__version__,
        instructions=INSTRUCTIONS,
        # Without this the 2026-07-28 HTTP path re-runs tools/list before every call to check Mcp-Param headers,
        # which would put phantom listings in the trace. Our schemas declare no such headers.
        get_tool_input_schema=lambda name: None,
        on_list_tools=recorded(handlers.list_tools),
        on_call_tool=handlers.call_tool,
        on_list_prompts=recorded(handlers.list_prompts),
        on_get_prompt=recorded(handlers.get_prompt),
        on_list_resources=recorded(handlers.list_resources),
        on_read_resource=recorded(handlers.read_resource),
        on_subscriptions_listen=recorded(handlers.listen),
    )


class _EpisodeHandlers:
    """The handlers: each finds the request's episode (started on its first request) and lets it answer."""

    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve

    def episode_for(self, ctx: ServerRequestContext[Any, Any]) -> Episode:
        episode = self.resolve(ctx)
        if not episode.started:
            episode.start(ctx.protocol_version)
        return episode

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return self.episode_for(ctx).list_tools()

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:  # the hot path, so not `recorded`: one frame fewer on every call
            episode = self.episode_for(ctx)
        except StorageError as exc:
            raise unrecorded(exc) from None
        try:
            arguments = params.arguments if params.arguments is not None else {}
            return await episode.call_tool(params.name, arguments, notifier(ctx, episode))
        except MCPError:  # a proxied server's own protocol error, already traced: passed on as it came
            raise
        except StorageError as exc:
            raise unrecorded(exc) from None
        except Exception as exc:  # last line of defence: a fault is an isError result, never a protocol error
            log.exception("tool call crashed", tool=params.name, episode=episode.id)
            return error_result(f"Internal error in tool '{params.name}': {type(exc).__name__}")

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        episode = self.episode_for(ctx)
        prompt = types.Prompt(name=TASK_PROMPT_NAME, title=episode.task.title, description="The task to solve.")
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        episode = self.episode_for(ctx)
        if params.name != TASK_PROMPT_NAME:
            raise MCPError(
                types.INVALID_PARAMS, f"Unknown prompt '{params.name}'; the only prompt is '{TASK_PROMPT_NAME}'."
            )
        episode.record_task_read("prompt")
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=episode.prompt_text()))
        return types.GetPromptResult(description=episode.task.title, messages=[message])

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        episode = self.episode_for(ctx)
        resource = types.Resource(
            name="task", uri=episode.task_uri(), mime_type="text/plain", description="The task to solve."
        )
        return types.ListResourcesResult(resources=[resource])

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        episode = self.episode_for(ctx)
        if str(params.uri) != episode.task_uri():
            raise MCPError(
                types.INVALID_PARAMS, f"Unknown resource '{params.uri}'; the task is at {episode.task_uri()}."
            )
        episode.record_task_read("resource")
        contents = types.TextResourceContents(
            uri=episode.task_uri(), mime_type="text/plain", text=episode.prompt_text()
        )
        return types.ReadResourceResult(contents=[contents])

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        return await self.episode_for(ctx).listen_handler(ctx, params)

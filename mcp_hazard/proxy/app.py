"""The MCP server a proxy serves: tools through the episode (hazards, interventions, trace), everything else passed
on to the real server as it is: resources and their templates and subscriptions, prompts, completion, the logging
level, each with the server's own pages and errors. The proxy offers what the server offers, under the server's name;
with a task from the proxy file it also serves the task as the prompt `task` and a resource, and `submit_answer`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_hazard.logs import log
from mcp_hazard.proxy import task
from mcp_hazard.proxy.proxied_episode import ProxyEpisode
from mcp_hazard.proxy.upstream import UpstreamError
from mcp_hazard.proxy.upstream_info import UpstreamInfo
from mcp_hazard.server.app import HazardServer, notifier
from mcp_hazard.server.results import error_result
from mcp_hazard.server.served_episode import TASK_PROMPT_NAME

Resolver = Callable[[ServerRequestContext[Any, Any]], ProxyEpisode]
Handler = Callable[..., Awaitable[Any]]


def _params(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    data = params.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("_meta", None)
    return dict(data)


def build_proxy_server(resolve: Resolver, info: UpstreamInfo, *, with_task: bool) -> Server[Any]:
    """A low-level SDK server whose handlers find the request's episode, open its connection to the real server if
    need be, and serve tools through it and everything else from the server."""
    capabilities = info.capabilities
    proxy = _ProxyHandlers(resolve, "prompts" in capabilities, "resources" in capabilities)
    handlers: dict[str, Handler] = {"on_list_tools": proxy.list_tools, "on_call_tool": proxy.call_tool}
    if "prompts" in capabilities or with_task:
        handlers |= {"on_list_prompts": proxy.list_prompts, "on_get_prompt": proxy.get_prompt}
    if "resources" in capabilities or with_task:
        handlers |= {"on_list_resources": proxy.list_resources, "on_read_resource": proxy.read_resource}
    offered = set(capabilities)
    if (capabilities.get("resources") or {}).get("subscribe"):
        offered.add("resources.subscribe")
    for handler, (capability, method, result) in _FORWARDED.items():
        if capability in offered:
            handlers[handler] = proxy.forwarding(method, result)
    instructions = task.with_instructions(info.instructions) if with_task else info.instructions or ""
    return HazardServer(
        info.name,
        version=info.version,
        instructions=instructions or None,
        get_tool_input_schema=lambda name: None,
        on_subscriptions_listen=proxy.listen,
        **cast(Any, handlers),
    )


_FORWARDED: dict[str, tuple[str, str, type[Any]]] = {
    # handler: (the capability the server must offer, its method, its result) - passed on as they are
    "on_list_resource_templates": ("resources", "resources/templates/list", types.ListResourceTemplatesResult),
    "on_subscribe_resource": ("resources.subscribe", "resources/subscribe", types.EmptyResult),
    "on_unsubscribe_resource": ("resources.subscribe", "resources/unsubscribe", types.EmptyResult),
    "on_completion": ("completions", "completion/complete", types.CompleteResult),
    "on_set_logging_level": ("logging", "logging/setLevel", types.EmptyResult),
}


class _ProxyHandlers:
    """The handlers: tools through the request's episode, the task from the proxy file, the rest from the server."""

    def __init__(self, resolve: Resolver, prompts: bool, resources: bool) -> None:
        self.resolve = resolve
        self.prompts = prompts  # whether the server offers prompts, resources
        self.resources = resources

    async def episode_for(self, ctx: ServerRequestContext[Any, Any]) -> ProxyEpisode:
        episode = self.resolve(ctx)
        episode.seen(ctx)
        try:
            await episode.ready()
        except UpstreamError as exc:
            log.warning("upstream unreachable", episode=episode.id, error=exc.message)
            raise exc.to_mcp() from None
        episode.start(ctx.protocol_version)
        return episode

    async def forward(self, ctx: ServerRequestContext[Any, Any], method: str, params: Any, result: type[Any]) -> Any:
        episode = await self.episode_for(ctx)
        assert episode.upstream is not None
        try:
            reply = await episode.upstream.request(method, _params(params))
        except UpstreamError as exc:
            raise exc.to_mcp() from None
        return result.model_validate(reply)

    def forwarding(self, method: str, result: type[Any]) -> Handler:
        async def handler(ctx: Any, params: Any) -> Any:
            return await self.forward(ctx, method, params, result)

        return handler

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return (await self.episode_for(ctx)).list_tools()

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        episode = await self.episode_for(ctx)
        try:
            arguments = params.arguments if params.arguments is not None else {}
            return await episode.call_tool(params.name, arguments, notifier(ctx, episode))
        except MCPError:  # the server's own protocol error, traced by the episode: passed on as it came
            raise
        except Exception as exc:  # a fault of ours is an isError result, never a protocol error
            log.exception("proxied tool call crashed", tool=params.name, episode=episode.id)
            return error_result(f"Internal error in tool '{params.name}': {type(exc).__name__}")

    async def list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        listing = (types.ListPromptsResult, "prompts", task.prompt_entry)
        return await self._listed(ctx, params, "prompts/list" if self.prompts else None, *listing)

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        episode = await self.episode_for(ctx)
        if episode.takes_answer and params.name == TASK_PROMPT_NAME:
            return task.read_prompt(episode)
        return await self.forward(ctx, "prompts/get", params, types.GetPromptResult)

    async def list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        listing = (types.ListResourcesResult, "resources", task.resource_entry)
        return await self._listed(ctx, params, "resources/list" if self.resources else None, *listing)

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        episode = await self.episode_for(ctx)
        if episode.takes_answer and str(params.uri) == episode.task_uri():
            return task.read_resource(episode)
        return await self.forward(ctx, "resources/read", params, types.ReadResourceResult)

    async def _listed(
        self, ctx: Any, params: types.PaginatedRequestParams | None, method: str | None, result: type[Any], key: str,
        entry: Callable[[ProxyEpisode], Any],
    ) -> Any:  # fmt: skip
        """The server's list (`method`; None: it offers none), with the task's entry first on the first page."""
        episode = await self.episode_for(ctx)
        found = result(**{key: []})
        if method is not None:
            found = await self.forward(ctx, method, params, result)
        if episode.takes_answer and (params is None or params.cursor is None):
            found = found.model_copy(update={key: [entry(episode), *getattr(found, key)]})
        return found

    async def listen(self, ctx: Any, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        return await (await self.episode_for(ctx)).listen_handler(ctx, params)

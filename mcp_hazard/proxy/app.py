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
from mcp_hazard.proxy.episode import ProxyEpisode
from mcp_hazard.proxy.upstream import UpstreamError
from mcp_hazard.proxy.upstream_info import UpstreamInfo
from mcp_hazard.server.app import HazardServer, notifier
from mcp_hazard.server.episode import TASK_PROMPT_NAME
from mcp_hazard.server.results import error_result

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

    async def episode_for(ctx: ServerRequestContext[Any, Any]) -> ProxyEpisode:
        episode = resolve(ctx)
        episode.seen(ctx)
        try:
            await episode.ready()
        except UpstreamError as exc:
            log.warning("upstream unreachable", episode=episode.id, error=exc.message)
            raise exc.to_mcp() from None
        episode.start(ctx.protocol_version)
        return episode

    async def forward(ctx: ServerRequestContext[Any, Any], method: str, params: Any, result: type[Any]) -> Any:
        episode = await episode_for(ctx)
        assert episode.upstream is not None
        try:
            reply = await episode.upstream.request(method, _params(params))
        except UpstreamError as exc:
            raise exc.to_mcp() from None
        return result.model_validate(reply)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return (await episode_for(ctx)).list_tools()

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        episode = await episode_for(ctx)
        try:
            arguments = params.arguments if params.arguments is not None else {}
            return await episode.call_tool(params.name, arguments, notifier(ctx, episode))
        except MCPError:  # the server's own protocol error, traced by the episode: passed on as it came
            raise
        except Exception as exc:  # a fault of ours is an isError result, never a protocol error
            log.exception("proxied tool call crashed", tool=params.name, episode=episode.id)
            return error_result(f"Internal error in tool '{params.name}': {type(exc).__name__}")

    capabilities = info.capabilities
    handlers: dict[str, Handler] = {"on_list_tools": list_tools, "on_call_tool": call_tool}

    if "prompts" in capabilities or with_task:

        async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
            episode = await episode_for(ctx)
            found = types.ListPromptsResult(prompts=[])
            if "prompts" in capabilities:
                found = await forward(ctx, "prompts/list", params, types.ListPromptsResult)
            if episode.takes_answer and (params is None or params.cursor is None):
                found = found.model_copy(update={"prompts": [task.prompt_entry(episode), *found.prompts]})
            return found

        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
            episode = await episode_for(ctx)
            if episode.takes_answer and params.name == TASK_PROMPT_NAME:
                return task.read_prompt(episode)
            return await forward(ctx, "prompts/get", params, types.GetPromptResult)

        handlers |= {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}

    if "resources" in capabilities or with_task:

        async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
            episode = await episode_for(ctx)
            found = types.ListResourcesResult(resources=[])
            if "resources" in capabilities:
                found = await forward(ctx, "resources/list", params, types.ListResourcesResult)
            if episode.takes_answer and (params is None or params.cursor is None):
                found = found.model_copy(update={"resources": [task.resource_entry(episode), *found.resources]})
            return found

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
            episode = await episode_for(ctx)
            if episode.takes_answer and str(params.uri) == episode.task_uri():
                return task.read_resource(episode)
            return await forward(ctx, "resources/read", params, types.ReadResourceResult)

        handlers |= {"on_list_resources": list_resources, "on_read_resource": read_resource}

    if "resources" in capabilities:

        async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
            return await forward(ctx, "resources/templates/list", params, types.ListResourceTemplatesResult)

        handlers["on_list_resource_templates"] = list_templates
        if (capabilities.get("resources") or {}).get("subscribe"):

            async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
                return await forward(ctx, "resources/subscribe", params, types.EmptyResult)

            async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
                return await forward(ctx, "resources/unsubscribe", params, types.EmptyResult)

            handlers |= {"on_subscribe_resource": subscribe, "on_unsubscribe_resource": unsubscribe}

    if "completions" in capabilities:

        async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
            return await forward(ctx, "completion/complete", params, types.CompleteResult)

        handlers["on_completion"] = complete

    if "logging" in capabilities:

        async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
            return await forward(ctx, "logging/setLevel", params, types.EmptyResult)

        handlers["on_set_logging_level"] = set_level

    async def listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        return await (await episode_for(ctx)).listen_handler(ctx, params)

    instructions = task.with_instructions(info.instructions) if with_task else info.instructions or ""
    return HazardServer(
        info.name,
        version=info.version,
        instructions=instructions or None,
        get_tool_input_schema=lambda name: None,
        on_subscriptions_listen=listen,
        **cast(Any, handlers),
    )

"""One episode in front of a real server: the same episode (slots, hazards, interventions, trace), with each tool
call forwarded to the server instead of run from a behaviour.

What no hazard touches reaches the client as the server sent it. A call whose arguments do not fit the listed schema
is still forwarded (the server has the last word) and only labelled `invalid_arguments` when the server refuses it.
The server's own failures are traced as its outcomes: an isError result as `error`, a JSON-RPC error or a lost
connection as `upstream_error` (passed on to the client as that JSON-RPC error); injected ones stay `rejected`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hazard.hazards import ToolView
from mcp_hazard.interventions import Surface
from mcp_hazard.logs import log
from mcp_hazard.proxy.environment import OPEN_TASK, Environment
from mcp_hazard.proxy.result_values import error_text, rewrite_text, value_of
from mcp_hazard.proxy.tools import noted
from mcp_hazard.proxy.upstream import Upstream, UpstreamError
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import ToolSpec
from mcp_hazard.server.results import ToolCallFailed
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.trace import events as ev

Connector = Callable[["ProxyEpisode"], Awaitable[tuple[Upstream, Callable[[], None]]]]
"""Opens this episode's connection to the server: the upstream, and what closes it."""

REQUEST: ContextVar[Any] = ContextVar("mcp_hazard_proxy_request", default=None)
"""The client's request being served, so the server's progress reaches the right request."""
MAX_DELIVERING = 1000
"""The server's notifications being passed on to the client at once; past it, a flood's excess is dropped (logged)."""


class ProxyEpisode(Episode):
    checks_arguments = False

    def __init__(self, *, environment: Environment, connector: Connector, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.environment = environment
        self.connector = connector
        self.upstream: Upstream | None = None
        self._close: Callable[[], None] | None = None
        self._last_request: Any = None
        self._refreshing = False  # a re-reading of the server's tool list is under way
        self._changed_again = False  # and the server said its list changed again since it began
        self._delivering = 0  # the server's notifications being passed on to the client
        self._dropping = False

    @property
    def takes_answer(self) -> bool:
        return self.task.id != OPEN_TASK

    def upstream_record(self) -> dict[str, Any] | None:
        record = self.environment.upstream_record()
        if self.upstream is not None:
            record = {**record, **self.upstream.info.to_json(), "tools": record["tools"]}
        return record

    async def ready(self) -> Upstream:
        """This episode's connection, opened on its first request; an unreachable server is an UpstreamError."""
        if self.upstream is None:
            upstream, close = await self.connector(self)
            if self.ended:  # the episode ended while the connection opened
                close()
                raise UpstreamError(types.INVALID_REQUEST, "This episode has ended.")
            self.upstream, self._close = upstream, close
        return self.upstream

    def end(self, reason: str) -> None:
        super().end(reason)
        if self._close is not None:
            self._close()
            self._close = None

    def seen(self, ctx: Any) -> None:
        """Remember the latest request: the server's own notifications reach the client through its session."""
        self._last_request = ctx
        REQUEST.set(ctx)

    # -- calls -----------------------------------------------------------------------------------------------------

    async def execute(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutcome:
        upstream = await self.ready()
        request = REQUEST.get()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if request is not None:
                try:
                    await request.session.report_progress(value, total, message)
                except Exception:  # a client that went away must not fail the call
                    log.debug("progress not delivered", episode=self.id)

        try:
            result = await upstream.request("tools/call", {"name": spec.name, "arguments": arguments}, progress)
        except UpstreamError as exc:
            raise ToolCallFailed("upstream_error", exc.message, exc.to_mcp()) from None
        raw = types.CallToolResult.model_validate(result)
        if result.get("isError"):
            return ToolOutcome(error=error_text(result), raw=raw)
        return ToolOutcome(result=value_of(result), raw=raw)

    def present(
        self, view: ToolView, result: Any, text: str | None, structured: Any, hints: list[str],
        original: ToolOutcome | None,
    ) -> types.CallToolResult:  # fmt: skip
        if original is None or original.raw is None:
            return super().present(view, result, text, structured, hints, original)
        if text is None and result == original.result:  # only hints to add: the server's blocks as they came
            blocks = [*original.raw.content, *(types.TextContent(type="text", text=f"Hint: {h}") for h in hints)]
            return original.raw.model_copy(update={"content": blocks})
        raw = original.raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        # Structured content stays structured (MCP allows it without a listed output schema, and a client checks it
        # only against one that is listed); only a change of form (output drift: `text`) serves text alone.
        keep = raw.get("structuredContent") is not None
        return replaced_result(raw, original.result, result, text=text, structured=keep, hints=hints)

    def _tool(self, surface: Surface, view: ToolView) -> types.Tool:
        """The tool as the server listed it, with what hazards and interventions change: name, description,
        schemas. Everything else (annotations, icons, _meta) is the server's."""
        spec = noted(self.tools[view.original])
        if spec is None or not spec.listed:
            return super()._tool(surface, view)
        listed = types.Tool.model_validate(spec.listed)
        update: dict[str, Any] = {"name": surface.name, "input_schema": surface.input_schema,
                                  "output_schema": surface.output_schema}  # fmt: skip
        if surface.description != spec.description or listed.description is not None:
            update["description"] = surface.description
        return listed.model_copy(update=update)

    # -- what the server says on its own -----------------------------------------------------------------------------

    async def on_upstream(self, message: Any) -> None:
        """Pass on a notification the server sent by itself; a changed tool list is re-read (one re-reading at a
        time) and traced."""
        ctx = self._last_request
        if ctx is None:
            return
        if self._delivering >= MAX_DELIVERING:
            if not self._dropping:  # one line per burst
                log.warning("upstream notifications dropped: the client is not reading them", episode=self.id)
            self._dropping = True
            return
        self._dropping = False
        self._delivering += 1
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        try:
            if isinstance(message, types.LoggingMessageNotificationParams):
                await ctx.session.send_log_message(message.level, message.data, message.logger)
                return
            root = getattr(message, "root", message)
            if isinstance(root, types.ToolListChangedNotification):

                async def announce() -> None:
                    await (self.bus.publish(ToolsListChanged()) if modern else ctx.session.send_tool_list_changed())

                if self.tools_changed():
                    await self.refresh_changed(announce)
            elif isinstance(root, types.PromptListChangedNotification):
                await (self.bus.publish(PromptsListChanged()) if modern else ctx.session.send_prompt_list_changed())
            elif isinstance(root, types.ResourceListChangedNotification):
                await (self.bus.publish(ResourcesListChanged()) if modern
                       else ctx.session.send_resource_list_changed())  # fmt: skip
            elif isinstance(root, types.ResourceUpdatedNotification):
                uri = str(root.params.uri)
                await (self.bus.publish(ResourceUpdated(uri=uri)) if modern
                       else ctx.session.send_resource_updated(uri))  # fmt: skip
        except Exception:  # the client may be gone; the server's news is not worth failing over
            log.debug("upstream notification not delivered", episode=self.id)
        finally:
            self._delivering -= 1

    def tools_changed(self) -> bool:
        """Note that the server's tool list changed; True when the caller must run `refresh_changed` (no
        re-reading is under way: one that is will read the list again when it is done)."""
        if self._refreshing:
            self._changed_again = True
            return False
        self._refreshing = True
        return True

    async def refresh_changed(self, announce: Callable[[], Awaitable[None]]) -> None:
        """Re-read the server's tool list, trace it and `announce` it to the client, again as long as the server
        said it changed while it was read: a flood of notifications costs one more re-reading, not one each."""
        try:
            while True:
                self._changed_again = False
                await self.refresh_tools()
                self.trace.write(ev.ListChanged, delivered=True, source="upstream")
                await announce()
                if not self._changed_again:
                    return
        finally:
            self._refreshing = False

    async def refresh_tools(self) -> None:
        """The server's new list: new tools served as they are (hazards keep the tools they were given), gone ones
        no longer served."""
        from mcp_hazard.proxy.environment import tool_spec

        if self.upstream is None:
            return
        try:
            listed = await self.upstream.list_all_tools()
        except UpstreamError:
            return
        notes = self.environment.file.model.tools if self.environment.file is not None else {}
        fresh: dict[str, ToolSpec] = {}
        for tool in listed:
            name = str(tool.get("name", ""))
            old = noted(self.tools.get(name))
            fresh[name] = tool_spec(tool, notes.get(name), list(old.serves) if old is not None else [])
        wanted = set(self.task.tools) if self.task.tools is not None else None
        self.tools = {n: s for n, s in fresh.items() if wanted is None or n in wanted}
        self.served.tools = self.tools


def replaced_result(
    raw: dict[str, Any], old: Any, new: Any, *, text: str | None, structured: bool, hints: list[str]
) -> types.CallToolResult:
    """A result carrying `new` in place of `old`: the text as `rewrite_text` writes it (or `text`, when a hazard chose
    the form), the server's other blocks (images, resources) kept, structured content when the listing still
    promises it."""
    blocks: list[types.ContentBlock] = [types.TextContent(type="text", text=text if text is not None else
                                                          rewrite_text(raw, old, new))]  # fmt: skip
    for block in raw.get("content") or []:
        if isinstance(block, dict) and block.get("type") != "text":
            blocks.append(types.CallToolResult.model_validate({"content": [block]}).content[0])
    blocks.extend(types.TextContent(type="text", text=f"Hint: {hint}") for hint in hints)
    content = new if structured and isinstance(new, dict) and text is None else None
    return types.CallToolResult(content=blocks, structured_content=content)

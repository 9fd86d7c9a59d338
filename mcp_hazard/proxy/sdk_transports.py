"""The SDK client's transports to a real server, with the proxy's bounds: the SDK's own stdio transport keeps a line
of any size in memory, logs a traceback for each line it cannot parse and drops it (the request it answered then
waits forever), gives up on bytes that are not UTF-8, and refuses a whole `tools/list` page for one tool whose
`inputSchema` is `{}`.

Over stdio the server's lines are read as the frame relay reads them (server_frames.py: bounded, refused in one log
line, a refused answer turned into the error that answers its request). Over HTTP the SDK's transport is kept, with
an SSE event and a JSON body bounded at the same size. On both, each `tools/list` answer keeps only the tools the
proxy can serve (tools.py), before the SDK validates it, and a `notifications/tools/list_changed` goes straight to
the episode, which re-reads the list once however many come (proxied_episode.py): through the SDK's session each one
cost about 0.4 ms, so a flood of them held up the server's next answers for seconds.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import ByteReceiveStream, TaskGroup
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_hazard.errors import first_error
from mcp_hazard.logs import LogBudget
from mcp_hazard.proxy.lines import Lines
from mcp_hazard.proxy.server_frames import REFUSED_CODE, Refused, ServerFrames, fault_budget
from mcp_hazard.proxy.server_process import ServerProcess
from mcp_hazard.proxy.tools import usable_tools
from mcp_hazard.proxy.upstream_errors import UpstreamError
from mcp_hazard.proxy.upstream_info import UpstreamSource
from mcp_hazard.server.frames import MAX_FRAME_BYTES

Listener = Callable[[Any], Awaitable[None]]


TOOLS_CHANGED = "notifications/tools/list_changed"


class Requests:
    """Our requests still waiting for an answer, with their methods: an answer to none of them is dropped with a log
    line (the SDK drops it without one), and a `tools/list` answer keeps only the tools the proxy can serve."""

    def __init__(self, budget: LogBudget) -> None:
        self.asked: dict[Any, str] = {}
        self.budget = budget

    def sent(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self.asked[message.id] = message.method
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self.asked.pop((message.params or {}).get("requestId"), None)

    def received(self, up: Any, result: Any) -> bool:
        """Whether an answer to `up` is awaited (a `tools/list` result is made servable in place)."""
        method = self.asked.pop(up, None)
        if method is None:
            self.budget.warning("the upstream server answered a request no one waits for", id=str(up)[:40])
            return False
        if method == "tools/list" and isinstance(result, dict) and "tools" in result:
            result["tools"] = usable_tools(result["tools"])
        return True


class BoundedStdio:
    """A stdio server for the SDK client, its lines read within the proxy's bounds."""

    def __init__(self, source: UpstreamSource, listener: Listener | None = None) -> None:
        self.source = source
        self.tools_changed = ToolsChanged(listener)
        self.server = ServerProcess(source, own_group=True)  # as the SDK's own stdio transport starts it
        self.requests = Requests(self.server.budget)
        self.frames: ServerFrames | None = None

    @property
    def refused(self) -> str | None:
        """Why the server's first refused line was refused, when it came before any good frame: what a failed
        handshake is reported with."""
        return self.frames.early if self.frames is not None else None

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[TransportStreams]:
        stdout = await self.server.start()
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as group:
            group.start_soon(self._read, stdout, to_session, group)
            group.start_soon(self._write, from_session, to_session)
            try:
                yield read_stream, write_stream
            finally:
                await self.server.close()
                group.cancel_scope.cancel()

    async def _read(self, stdout: ByteReceiveStream, to_session: Any, group: TaskGroup) -> None:
        frames = self.frames = ServerFrames(Lines(stdout), self.source.label(), self.server.budget)
        async with to_session:
            while (frame := await frames.next()) is not None:
                if frame.get("method") == TOOLS_CHANGED and "id" not in frame:
                    self.tools_changed(group)
                    continue
                if "method" not in frame and not self.requests.received(frame["id"], frame.get("result")):
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_python(frame, by_name=False)
                except ValidationError as exc:
                    refused = Refused(f"a frame that is not JSON-RPC ({_first_error(exc)})", _int_id(frame))
                    self.server.budget.warning(
                        "the upstream server wrote a line the proxy refused",
                        upstream=self.source.label(),
                        reason=refused.reason,
                        answered=refused.id,
                    )
                    answer = refused.answer()
                    if answer is None:
                        continue
                    message = types.jsonrpc_message_adapter.validate_python(answer, by_name=False)
                try:
                    await to_session.send(SessionMessage(message))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def _write(self, from_session: Any, to_session: Any) -> None:
        try:
            async with from_session:
                async for session_message in from_session:
                    self.requests.sent(session_message.message)
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await self.server.send_line(data.encode("utf-8"))
        except (UpstreamError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await to_session.aclose()  # the session sees the connection end instead of a request waiting forever


class ToolsChanged:
    """Tells the episode that the server's tool list changed, in a task of its own (it re-reads the list through
    this very connection), one task for all the notifications read before that task begins."""

    def __init__(self, listener: Listener | None) -> None:
        self.listener = listener
        self.told = False

    def __call__(self, group: TaskGroup) -> None:
        if self.listener is not None and not self.told:
            self.told = True
            group.start_soon(self._tell)

    async def _tell(self) -> None:
        self.told = False
        assert self.listener is not None
        await self.listener(types.ToolListChangedNotification())


def _int_id(frame: dict[str, Any]) -> int | None:
    up = frame.get("id")
    return up if type(up) is int and "method" not in frame else None


def _first_error(exc: ValidationError) -> str:
    where, message = first_error(exc)
    return " ".join(f"{where}: {message}".split())[:160]


# -- Streamable HTTP ---------------------------------------------------------------------------------------------------


class _CappedBody(httpx2.AsyncByteStream):
    """A response body that stops at MAX_FRAME_BYTES: a JSON answer is one frame."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.inner:
            size += len(chunk)
            if size > MAX_FRAME_BYTES:
                raise httpx2.StreamError(f"an answer of more than {MAX_FRAME_BYTES:,} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            response.stream = _CappedBody(response.stream)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def bounded_http(url: str, listener: Listener | None = None) -> AsyncIterator[TransportStreams]:
    """The SDK's Streamable HTTP transport, every event and body at most MAX_FRAME_BYTES; `tools/list` answers keep
    the tools the proxy can serve."""
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)  # the SDK's own client's
    client = httpx2.AsyncClient(timeout=timeout, transport=_CappedTransport(httpx2.AsyncHTTPTransport()))
    requests = Requests(fault_budget())
    tools_changed = ToolsChanged(listener)
    async with (
        client,
        streamable_http_client(url, http_client=client, max_sse_event_size=MAX_FRAME_BYTES) as (
            read,
            write,
        ),
    ):
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)

        async def down() -> None:
            async with to_session:
                async for item in read:
                    message = item.message if isinstance(item, SessionMessage) else None
                    if isinstance(message, types.JSONRPCNotification) and message.method == TOOLS_CHANGED:
                        tools_changed(group)
                        continue
                    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                        result = message.result if isinstance(message, types.JSONRPCResponse) else None
                        if not requests.received(message.id, result):
                            continue
                    if isinstance(message, types.JSONRPCError):
                        item = SessionMessage(_refused(message))
                    await to_session.send(item)

        async def up() -> None:
            async with from_session:
                async for item in from_session:
                    requests.sent(item.message)
                    await write.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(down)
            group.start_soon(up)
            try:
                yield read_stream, write_stream
            finally:
                group.cancel_scope.cancel()


_UNPARSED = "Failed to parse JSON response: "
_INVALID_JSON = re.compile(r"Invalid JSON: (.*?) \[type=", re.DOTALL)


def _refused(error: types.JSONRPCError) -> types.JSONRPCError:
    """The SDK's own error for an answer it could not parse (pydantic's text, over several lines) said as the stdio
    path says it; the server's own errors unchanged."""
    text = error.error.message
    if not text.startswith(_UNPARSED):
        return error
    found = _INVALID_JSON.search(text)
    reason = f"not JSON ({found.group(1)})" if found else text.removeprefix(_UNPARSED)
    message = f"the upstream server's answer was refused: {' '.join(reason.split())[:200]}"
    return types.JSONRPCError(jsonrpc="2.0", id=error.id, error=types.ErrorData(code=REFUSED_CODE, message=message))


class OneLine(logging.Filter):
    """The SDK's HTTP transport logs an answer it cannot parse with a traceback; the proxy's user gets one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {' '.join(str(error).split())[:200]}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


logging.getLogger("mcp.client.streamable_http").addFilter(OneLine())

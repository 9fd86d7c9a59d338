"""The real server behind the proxy, reached over stdio or Streamable HTTP with the official SDK client, or replayed
from a cassette. Everything the proxy asks of it goes through one `request(method, params)`, so recording and
replaying see every exchange the same way.

A proxy passes on what the server offers, logging included, which the 2026-07-28 protocol deprecates: the SDK's
deprecation warnings about it are the server's business, not noise for the proxy's user. Every path that reaches a
server imports this module, so the filter is set here.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import ValidationError

from mcp_hazard.errors import UserError
from mcp_hazard.logs import log
from mcp_hazard.proxy.tools import usable_tools
from mcp_hazard.proxy.upstream_errors import LOST, UpstreamError, timed_out, unfit
from mcp_hazard.proxy.upstream_info import UpstreamInfo, UpstreamSource

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
Listener = Callable[[Any], Awaitable[None]]
"""Receives what the server says on its own: notifications (list_changed, resources/updated, log messages)."""

CONNECT_TIMEOUT_S = 60.0
"""A server started with npx may download itself first."""
MAX_TOOL_LIST_BYTES = 8 * 1024 * 1024
"""All the tools a server lists, as compact JSON: every trace records them, and hazards act on the whole list."""


def dump(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def request_key(method: str, params: dict[str, Any] | None) -> str:
    """A request as a cassette matches it: the method and its parameters, `_meta` (progress tokens) left out."""
    kept = {k: v for k, v in (params or {}).items() if k != "_meta"}
    return method + " " + json.dumps(kept, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class Upstream:
    """One connection to the server, for one episode."""

    info: UpstreamInfo

    async def request(self, method: str, params: dict[str, Any] | None = None, progress: Progress | None = None
                      ) -> dict[str, Any]:  # fmt: skip
        raise NotImplementedError

    async def list_all_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists that the proxy can serve (tools.py), all pages read (hazards and
        interventions act on the whole list), at most MAX_TOOL_LIST_BYTES in all."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        size = 0
        for _page in range(1000):
            result = await self.request("tools/list", {"cursor": cursor} if cursor else None)
            page = usable_tools(result.get("tools", []))
            size += sum(len(json.dumps(tool, separators=(",", ":"))) for tool in page)
            if size > MAX_TOOL_LIST_BYTES:
                raise UpstreamError(LOST, f"the server's tool list is over {MAX_TOOL_LIST_BYTES:,} bytes")
            tools.extend(page)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return tools
        raise UpstreamError(LOST, "the server's tool list did not end after 1000 pages")


class LiveUpstream(Upstream):
    """The server itself, through an SDK client that another task keeps open (UpstreamHost)."""

    def __init__(self, client: Client, info: UpstreamInfo, recorder: Recorder | None, timeout: float) -> None:
        self.client = client
        self.info = info
        self.recorder = recorder
        self.timeout = timeout

    async def request(self, method: str, params: dict[str, Any] | None = None, progress: Progress | None = None
                      ) -> dict[str, Any]:  # fmt: skip
        key = request_key(method, params)
        seen: list[list[Any]] = []

        async def relay(value: float, total: float | None, message: str | None) -> None:
            seen.append([value, total, message])
            if progress is not None:
                await progress(value, total, message)

        try:
            with anyio.fail_after(self.timeout):
                result = await _send(self.client, method, params or {}, relay)
        except TimeoutError:
            raise timed_out(method, self.timeout) from None
        except ValidationError as exc:  # the SDK's model of the answer refused it
            raise unfit(method, exc) from None
        except MCPError as exc:
            error = UpstreamError(exc.error.code, exc.error.message, exc.error.data)
            if self.recorder is not None:
                self.recorder.exchange(key, error=error, progress=seen)
            raise error from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            raise UpstreamError(LOST, f"the server's connection was lost ({type(exc).__name__})") from None
        if self.recorder is not None:
            self.recorder.exchange(key, result=result, progress=seen)
        return result


async def _send(client: Client, method: str, p: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """One request through the SDK client's typed methods; caches bypassed, since a drifted server must be seen."""
    cursor = p.get("cursor")
    if method == "tools/list":
        return dump(await client.list_tools(cursor=cursor, cache_mode="bypass"))
    if method == "tools/call":
        return dump(await client.call_tool(p["name"], p.get("arguments"), progress_callback=cast(Any, progress)))
    if method == "resources/list":
        return dump(await client.list_resources(cursor=cursor, cache_mode="bypass"))
    if method == "resources/templates/list":
        return dump(await client.list_resource_templates(cursor=cursor, cache_mode="bypass"))
    if method == "resources/read":
        return dump(await client.read_resource(p["uri"], cache_mode="bypass"))
    if method == "resources/subscribe":
        return dump(await client.subscribe_resource(p["uri"]))
    if method == "resources/unsubscribe":
        return dump(await client.unsubscribe_resource(p["uri"]))
    if method == "prompts/list":
        return dump(await client.list_prompts(cursor=cursor, cache_mode="bypass"))
    if method == "prompts/get":
        return dump(await client.get_prompt(p["name"], p.get("arguments")))
    if method == "completion/complete":
        params = types.CompleteRequestParams.model_validate(p)
        context = params.context.arguments if params.context is not None else None
        argument = {"name": params.argument.name, "value": params.argument.value}
        return dump(await client.complete(params.ref, argument, context))
    if method == "logging/setLevel":
        return dump(await client.set_logging_level(p["level"]))
    if method == "ping":
        return dump(await client.send_ping())
    raise UpstreamError(types.METHOD_NOT_FOUND, f"the proxy does not pass on {method!r}")


class Recorder:
    """Appends every exchange with the server to a cassette file (JSONL), flushed line by line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: Any = None

    def start(self, info: UpstreamInfo) -> None:
        if self._file is not None:
            return
        fresh = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held open for the process's life
        if fresh:
            self._write({"cassette": 1, "upstream": info.to_json()})

    def exchange(self, key: str, *, result: Any = None, error: UpstreamError | None = None,
                 progress: list[list[Any]] | None = None) -> None:  # fmt: skip
        line: dict[str, Any] = {"request": key}
        if error is not None:
            line["error"] = {"code": error.code, "message": error.message}
        else:
            line["result"] = result
        if progress:
            line["progress"] = progress
        self._write(line)

    def _write(self, data: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass
class UpstreamHost:
    """Keeps live connections open, one task each, inside a task group that outlives any one request: the SDK client
    must be entered and left by the same task, and a connection lives as long as its episode."""

    recorder: Recorder | None = None
    _group: TaskGroup | None = None
    _open: set[anyio.Event] = field(default_factory=set)
    _done: set[anyio.Event] = field(default_factory=set)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[UpstreamHost]:
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield self
            finally:
                # Close every connection the way its client closes (a stdio server gets EOF and exits), and cancel
                # only what does not close within a few seconds.
                for closed in list(self._open):
                    closed.set()
                with anyio.move_on_after(5, shield=True):
                    while self._done:
                        await next(iter(self._done)).wait()
                group.cancel_scope.cancel()
                self._group = None

    async def connect(self, source: UpstreamSource, listener: Listener | None = None
                      ) -> tuple[LiveUpstream, anyio.Event]:  # fmt: skip
        """A connected upstream and the event that closes it."""
        from mcp_hazard.proxy.sdk_transports import BoundedStdio
        from mcp_hazard.proxy.stderr_log import stderr_tail

        if self._group is None:
            raise RuntimeError("UpstreamHost.connect outside running()")
        closed = anyio.Event()
        stdio = BoundedStdio(source, listener) if source.url is None else None
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                upstream: LiveUpstream = await self._group.start(self._keep, source, stdio, listener, closed)
        except Exception as exc:
            reason = _reason(exc)
            if stdio is not None and stdio.refused is not None:
                reason += f"; before any answer it wrote {stdio.refused}"
            if stdio is not None:
                reason += stderr_tail(source.stderr_log)
            raise UpstreamError(LOST, f"cannot reach the upstream server ({source.label()}): {reason}") from None
        return upstream, closed

    async def _keep(
        self, source: UpstreamSource, stdio: Any, listener: Listener | None, closed: anyio.Event,
        *, task_status: TaskStatus[LiveUpstream] = anyio.TASK_STATUS_IGNORED,
    ) -> None:  # fmt: skip
        started = False
        done = anyio.Event()
        self._open.add(closed)
        self._done.add(done)
        try:
            async with _client(source, stdio, listener) as client:
                info = _info(client, source)
                if self.recorder is not None:
                    self.recorder.start(info)
                task_status.started(LiveUpstream(client, info, self.recorder, source.timeout))
                started = True
                await closed.wait()
        except Exception as exc:
            if not started:
                raise
            log.warning("upstream connection ended", upstream=source.label(), error=_reason(exc))
        finally:
            self._open.discard(closed)
            self._done.discard(done)
            done.set()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer to the handshake within {CONNECT_TIMEOUT_S:g} s"
    if isinstance(exc, BaseExceptionGroup):
        return _reason(exc.exceptions[0])
    if isinstance(exc, MCPError):
        return exc.error.message
    if isinstance(exc, UpstreamError):
        return exc.message
    if isinstance(exc, UserError):  # the command could not be started
        return str(exc).rsplit("): ", 1)[-1]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _client(source: UpstreamSource, stdio: Any, listener: Listener | None) -> Client:
    """The SDK client on the proxy's own bounded transports (sdk_transports.py)."""
    from mcp_hazard.proxy.sdk_transports import bounded_http

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        if listener is not None:
            await listener(params)

    async def on_message(message: Any) -> None:
        if listener is not None and not isinstance(message, Exception):
            await listener(message)

    target: Any = bounded_http(source.url, listener) if source.url is not None else stdio.streams()
    return Client(target, logging_callback=on_log, message_handler=on_message)


def _info(client: Client, source: UpstreamSource) -> UpstreamInfo:
    server = client.server_info
    capabilities = client.server_capabilities
    return UpstreamInfo(
        name=server.name if server is not None else "unknown",
        version=server.version if server is not None else "",
        protocol_version=client.protocol_version,
        capabilities=dump(capabilities) if capabilities is not None else {},
        instructions=client.instructions,
        source=source.describe(),
    )

"""A stdio proxy that relays JSON-RPC frames between the client (our stdin/stdout) and a stdio server (a child
process), and parses and answers itself only what the episode acts on: `tools/list`, `tools/call`, and the task's
prompt and resource. Everything else crosses as the frame it came as, both ways, in both protocol eras: the
handshake or discovery, resources, prompts, completion, logging, progress, subscriptions, and the requests a server
sends its client (sampling, elicitation, roots), which an SDK-to-SDK proxy cannot pass on.

It is the default for a stdio client in front of a stdio server (`proxy --upstream-cmd`), for speed: a proxied call
costs one pipe hop and the episode's own work, not a second SDK stack (docs/performance.md, "Proxy overhead").
Cassettes and HTTP servers go through the SDK proxy (app.py), which shares the episode, hazards and trace.

Ids: the client's requests reach the server under ids the relay allocates (so they never collide with the relay's
own requests, such as the episode's forwarded calls), and answers go back under the client's ids; a listen
subscription's events are re-labelled the same way. The server's requests to the client keep their ids (the other
direction has its own id space).

The parts the relay routes between are in their own modules: the server's process and the relay's own requests to it
(server_process.py), the client's requests forwarded to it and their deadlines (forwarded.py), the bounded lines of
both pipes and what the server may write on its own (lines.py, server_frames.py), the handshake the client hears
(handshake.py), and the task a proxy serves (task.py, shared with app.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import IO, Any

import anyio
from anyio.abc import ByteReceiveStream, TaskGroup
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_hazard.condition import Condition
from mcp_hazard.hazards.fit import check_fit_in_task
from mcp_hazard.logs import log
from mcp_hazard.proxy import task
from mcp_hazard.proxy.forwarded import Forwarded
from mcp_hazard.proxy.handshake import client_handshake, server_info
from mcp_hazard.proxy.lines import read_client_frames
from mcp_hazard.proxy.proxied_episode import ProxyEpisode
from mcp_hazard.proxy.server_process import ServerProcess
from mcp_hazard.proxy.service import ProxyService
from mcp_hazard.proxy.upstream import LOST, Progress, Upstream, UpstreamError
from mcp_hazard.proxy.upstream_info import UpstreamInfo
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.server.frames import UNTRACED_REFUSALS, Refusal
from mcp_hazard.server.results import error_result
from mcp_hazard.server.served_episode import TASK_PROMPT_NAME

FORWARD_META: ContextVar[dict[str, Any] | None] = ContextVar("mcp_hazard_relay_meta", default=None)
"""The `_meta` of the client's request being served (progress token, the 2026-07-28 era's version and client info),
sent on with the call the episode forwards, so the server's progress reaches the client under its own token."""


def _dump(model: Any, legacy: bool) -> dict[str, Any]:
    data = dict(model.model_dump(mode="json", by_alias=True, exclude_none=True))
    if legacy:
        data.pop("resultType", None)  # a 2026-07-28 field; the handshake era's clients never see it
    return data


class _RelayUpstream(Upstream):
    """The server as the episode sees it: requests sent through the relay under the relay's own ids."""

    def __init__(self, relay: Relay, info: UpstreamInfo) -> None:
        self.relay = relay
        self.info = info

    async def request(self, method: str, params: dict[str, Any] | None = None, progress: Progress | None = None
                      ) -> dict[str, Any]:  # fmt: skip
        sent = dict(params or {})
        meta = FORWARD_META.get() if method == "tools/call" else self.relay.last_meta
        if meta:
            sent["_meta"] = meta
        return await self.relay.server.ask(method, sent)


class Relay:
    def __init__(self, service: ProxyService, trace_dir: Any, task: str | None, condition: Condition,
                 episode_id: str | None, agent: str | None, stdin: IO[bytes], stdout: IO[bytes]) -> None:  # fmt: skip
        self.service = service
        self.trace_dir, self.task, self.condition = trace_dir, task, condition
        self.episode_id, self.agent = episode_id, agent
        self.stdin, self.stdout = stdin, stdout
        self.server = ServerProcess(service.source)
        self.forwarded = Forwarded(service.source.timeout)
        self.calls: dict[Any, anyio.CancelScope] = {}  # the client's tools/call requests being served, by its id
        self.listen_filters: dict[Any, dict[str, Any]] = {}
        self.changed: dict[Any, dict[str, Any]] = {}  # the server's list_changed frames not yet passed on, by listen
        self.protocol_version = ""
        self.last_meta: dict[str, Any] | None = None
        self.upstream_info: UpstreamInfo | None = None
        self.episode: ProxyEpisode | None = None
        self.group: TaskGroup | None = None
        self.with_task = service.with_task

    # -- wiring ----------------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until the client closes stdin; the server is then closed like its own client would close it."""
        stdout = await self.server.start()
        try:
            async with anyio.create_task_group() as group:
                self.group = group
                group.start_soon(self._from_server, stdout)
                group.start_soon(self._stop_on_signal)
                group.start_soon(self._expire)
                await self._from_client()
                group.cancel_scope.cancel()
        finally:
            if self.episode is not None:
                self.episode.end("disconnected")
            await self.server.close()

    async def _stop_on_signal(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for received in signals:
                if self.episode is not None:
                    self.episode.end("server_stopped")
                self.server.terminate()
                os._exit(128 + int(received))

    def _write(self, frame: dict[str, Any]) -> None:
        """One frame to the client. Writes come from one event loop thread, so lines never interleave."""
        self.stdout.write(json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
        self.stdout.flush()

    # -- the client's side -------------------------------------------------------------------------------------

    async def _from_client(self) -> None:
        await read_client_frames(self.stdin, self._client_frame, self._refuse)

    def _refuse(self, refusal: Refusal) -> None:
        if self.episode is None:
            UNTRACED_REFUSALS.warning("frame refused", code=refusal.code, reason=refusal.message)
        else:
            self.episode.record_frame_refused(code=refusal.code, message=refusal.message, id=refusal.id,
                                              method=refusal.method, replied=refusal.reply)  # fmt: skip
        if refusal.reply:
            self._write(refusal.response())

    async def _client_frame(self, frame: dict[str, Any]) -> None:
        method = frame.get("method")
        given = frame.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        if method is None:  # the client's answer to a request of the server's: its id is the server's own
            await self.server.send(frame)
            return
        meta = params.get("_meta")
        if isinstance(meta, dict) and meta.get("io.modelcontextprotocol/protocolVersion"):
            self.protocol_version = str(meta["io.modelcontextprotocol/protocolVersion"])
            self.last_meta = {k: v for k, v in meta.items() if k != "progressToken"}
        if "id" not in frame:
            await self._client_notification(method, params, frame)
            return
        request_id = frame["id"]
        if method == "tools/list":
            await self._answer(request_id, self._list_tools)
        elif method == "tools/call":
            assert self.group is not None
            self.group.start_soon(self._call, request_id, params)
        elif self.with_task and method == "prompts/get" and params.get("name") == TASK_PROMPT_NAME:
            await self._answer(request_id, self._task_prompt)
        elif self.with_task and method == "resources/read" and params.get("uri") == await self._task_uri():
            await self._answer(request_id, self._task_resource)
        elif self.with_task and method in ("prompts/list", "resources/list") and not params.get("cursor"):
            if method.split("/")[0] in self._capabilities():
                await self._forward(request_id, frame, self._with_task(method))
            else:
                await self._answer(request_id, lambda: self._with_task(method)({}))
        else:
            transform = self._handshake if method in ("initialize", "server/discover") else None
            if method == "subscriptions/listen":
                self.listen_filters[request_id] = dict(params.get("notifications") or {})
            await self._forward(request_id, frame, transform)

    async def _client_notification(self, method: str, params: dict[str, Any], frame: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            wanted = params.get("requestId")
            scope = self.calls.get(wanted)
            if scope is not None:  # a call the episode serves: it records the cancel and tells the server
                scope.cancel()
                return
            mapped = self.forwarded.server_id(wanted)
            if mapped is not None:
                await self.server.send({**frame, "params": {**params, "requestId": mapped}})
            return
        await self.server.send(frame)

    async def _forward(self, request_id: Any, frame: dict[str, Any], transform: Any = None) -> None:
        up = self.server.next_id()
        self.forwarded.add(up, request_id, str(frame.get("method")), transform, anyio.current_time())
        await self.server.send({**frame, "id": up})

    async def _expire(self) -> None:
        """Answer each forwarded request the server left unanswered past its deadline with an error, and tell the
        server it is no longer wanted."""
        while True:
            await anyio.sleep(min(1.0, self.forwarded.timeout / 4))
            for up, answer in self.forwarded.expired(anyio.current_time()):
                self._write(answer)
                await self.server.cancel(up, "timed out")

    async def _answer(self, request_id: Any, make: Callable[..., Any]) -> None:
        """Answer a request here: `make` gives the result (a model or a dict); a user error becomes an error."""
        try:
            await self._ensure_episode()
            result = make()
            if hasattr(result, "__await__"):
                result = await result
        except MCPError as exc:
            self._write({"jsonrpc": "2.0", "id": request_id, "error": {"code": exc.error.code,
                                                                        "message": exc.error.message}})  # fmt: skip
            return
        if not isinstance(result, dict):
            result = _dump(result, self._legacy)
        self._write({"jsonrpc": "2.0", "id": request_id, "result": result})

    @property
    def _legacy(self) -> bool:
        return self.protocol_version not in MODERN_PROTOCOL_VERSIONS

    def _capabilities(self) -> dict[str, Any]:
        return self.upstream_info.capabilities if self.upstream_info is not None else {}

    # -- what the episode answers ----------------------------------------------------------------------------------

    async def _ensure_episode(self) -> ProxyEpisode:
        if self.episode is not None:
            return self.episode
        env = self.service.env
        assert env is not None
        info = self.upstream_info or env.info
        registry = EpisodeRegistry([env.scenario], self.trace_dir, transport="stdio",
                                   make_episode=self._make_episode, runner=self.service.runner)  # fmt: skip
        episode = registry.create(env.scenario.id, self.task, self.condition, self.episode_id, self.agent)
        assert isinstance(episode, ProxyEpisode)
        episode.upstream = _RelayUpstream(self, info)
        episode.start(self.protocol_version or info.protocol_version)
        self.episode = episode
        return episode

    def _make_episode(self, **kwargs: Any) -> ProxyEpisode:
        env = self.service.env
        assert env is not None

        async def connect(episode: ProxyEpisode) -> tuple[Upstream, Callable[[], None]]:
            raise UpstreamError(LOST, "the relay's episode is connected from the start")

        return ProxyEpisode(environment=env, connector=connect, **kwargs)

    def _list_tools(self) -> Any:
        assert self.episode is not None
        return self.episode.list_tools()

    async def _task_uri(self) -> str:
        return (await self._ensure_episode()).task_uri()

    def _task_prompt(self) -> Any:
        assert self.episode is not None
        return task.read_prompt(self.episode)

    def _task_resource(self) -> Any:
        assert self.episode is not None
        return task.read_resource(self.episode)

    def _with_task(self, method: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The server's first page of prompts or resources with the task's in front."""

        def add(result: dict[str, Any]) -> dict[str, Any]:
            episode = self.episode
            if episode is None or not episode.takes_answer:
                return result
            entry = task.prompt_entry(episode) if method == "prompts/list" else task.resource_entry(episode)
            key = "prompts" if method == "prompts/list" else "resources"
            return {**result, key: [_dump(entry, False), *(result.get(key) or [])]}

        return add

    def _handshake(self, result: dict[str, Any]) -> dict[str, Any]:
        """The server's handshake (or discovery) answer as the client gets it (handshake.py); the relay keeps the
        server's own info and the protocol era."""
        env = self.service.env
        self.upstream_info = server_info(result, env.info if env else None, self.service.source.describe())
        if result.get("protocolVersion"):
            self.protocol_version = str(result["protocolVersion"])
        return client_handshake(result, with_task=self.with_task)

    async def _call(self, request_id: Any, params: dict[str, Any]) -> None:
        """One `tools/call` through the episode (hazards, the forwarded call, the trace); a cancel from the client
        stops it without an answer, as the protocol asks."""
        with anyio.CancelScope() as scope:
            self.calls[request_id] = scope
            try:
                episode = await self._ensure_episode()
                meta = params.get("_meta")
                FORWARD_META.set(meta if isinstance(meta, dict) else None)
                arguments = params.get("arguments") if params.get("arguments") is not None else {}
                try:
                    result: Any = await episode.call_tool(str(params.get("name", "")), arguments, self._notify)
                except MCPError as exc:  # the server's own protocol error, traced: passed on as it came
                    self._write({"jsonrpc": "2.0", "id": request_id,
                                 "error": {"code": exc.error.code, "message": exc.error.message}})  # fmt: skip
                    return
                except Exception as exc:  # a fault of ours is an isError result, never a protocol error
                    log.exception("relayed tool call crashed", episode=episode.id)
                    result = error_result(f"Internal error in tool '{params.get('name')}': {type(exc).__name__}")
                self._write({"jsonrpc": "2.0", "id": request_id, "result": _dump(result, self._legacy)})
            finally:
                self.calls.pop(request_id, None)

    async def _notify(self) -> bool:
        """Announce a changed tool list the way the client's era hears it: a notification (2025-11-25), or an event
        on each listen subscription that asked for tool list changes (2026-07-28)."""
        if self._legacy:
            self._write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return True
        told = False
        for client_id, wanted in self.listen_filters.items():
            if wanted.get("toolsListChanged"):
                self._write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                             "params": {"_meta": {SUBSCRIPTION_ID_META_KEY: client_id}}})  # fmt: skip
                told = True
        return told

    # -- the server's side -------------------------------------------------------------------------------------

    async def _from_server(self, stdout: ByteReceiveStream) -> None:
        await self.server.read(stdout, self._server_frame)
        self._server_gone()

    def _server_gone(self) -> None:
        """The server's stdout closed (its own requests have failed already): the client's requests waiting on it
        fail too, and the client is told."""
        for waiting in self.forwarded.drain():
            self._write({"jsonrpc": "2.0", "id": waiting.client_id,
                         "error": {"code": LOST, "message": "the upstream server exited"}})  # fmt: skip

    async def _server_frame(self, frame: dict[str, Any]) -> None:
        if "method" not in frame:  # an answer to one of the client's requests (ours are settled before this)
            waiting = self.forwarded.settle(frame.get("id"))
            if waiting is None:
                self.server.budget.warning(
                    "the upstream server answered a request no one waits for", id=str(frame.get("id"))[:40]
                )
                return
            out = {**frame, "id": waiting.client_id}
            if waiting.transform is not None and isinstance(frame.get("result"), dict):
                out["result"] = waiting.transform(frame["result"])
            self._write(out)
            return
        params = frame.get("params")
        listen = None
        if isinstance(params, dict) and isinstance(params.get("_meta"), dict):
            meta = params["_meta"]
            if meta.get(SUBSCRIPTION_ID_META_KEY) in self.forwarded.listens:  # an event of a listen subscription
                listen = self.forwarded.listens[meta[SUBSCRIPTION_ID_META_KEY]]
                meta = {**meta, SUBSCRIPTION_ID_META_KEY: listen}
                frame = {**frame, "params": {**params, "_meta": meta}}
        if frame.get("method") == "notifications/tools/list_changed" and self.episode is not None:
            # Re-read in its own task (this one must go on reading the answer), one re-reading at a time: a flood
            # of notifications costs one more re-reading, not one each.
            self.changed[listen] = frame
            if self.episode.tools_changed():
                assert self.group is not None
                self.group.start_soon(self._tools_changed)
            return
        self._write(frame)

    async def _tools_changed(self) -> None:
        """The server's tool list changed: the episode re-reads it, the trace says so, the client hears it."""
        assert self.episode is not None

        async def announce() -> None:
            frames, self.changed = self.changed, {}
            for frame in frames.values():
                self._write(frame)

        await self.episode.refresh_changed(announce)


async def serve_relay(service: ProxyService, trace_dir: Any, task: str | None, condition: Condition,
                      episode_id: str | None, agent: str | None) -> None:  # fmt: skip
    """Check the proxy file and the condition against the server's tools (a short first connection), then relay."""
    from mcp_hazard.server.pipes import claim_stdin

    async with service.running():
        env = await service.discover()
    check_fit_in_task(condition.hazards, env.scenario.model, task)  # a named kind with nothing to act on, as `run`
    registry = EpisodeRegistry([env.scenario], trace_dir, transport="stdio", make_episode=service.make_episode,
                               runner=service.runner)  # fmt: skip
    registry.create(env.scenario.id, task, condition, episode_id, agent)  # every problem, before serving
    relay = Relay(service, trace_dir, task, condition, episode_id, agent, claim_stdin(), sys.stdout.buffer)
    await relay.run()

"""Serve one episode over stdio: one process, one agent attempt.

Stdin is read here, line by line, rather than by the SDK: the SDK drops a line it cannot parse without replying
(frames.py), so every line is checked first; a malformed one is answered with a JSON-RPC error and traced, and only
good lines reach the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import IO, Any, cast

import anyio
import mcp_types as types
from anyio.abc import ObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from mcp_hazard.server.app import build_server
from mcp_hazard.server.frames import INVALID_REQUEST, MAX_FRAME_BYTES, Refusal, parse_frame
from mcp_hazard.server.pipes import PipeWriter, claim_stdin, claim_stdout, read_lines, watchable
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.trace.storage import StorageError

ANSWER_GRACE_S = 2.0
"""How long the end of input waits for the answers to requests under way (not for a hazard's delay)."""


def single_episode_server(episode: Episode) -> Any:
    """A server that answers every request from `episode` (stdio and in-memory connections)."""
    return build_server(lambda ctx: episode)


async def _stop_on_signal(episode: Episode) -> None:
    """SIGTERM/SIGINT end the episode as `server_stopped` and exit at once.

    The SDK reads stdin in a worker thread that a signal cannot interrupt, so waiting for a clean shutdown would hang
    until the client closes stdin; the trace is flushed line by line, so exiting here loses nothing.
    """
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for received in signals:
            episode.end("server_stopped")
            os._exit(128 + int(received))


class CheckedLines:
    """An async iterator of the stdin lines the SDK may parse (what `stdio_server(stdin=...)` iterates).

    A line `parse_frame` refuses is answered on `replies` (once the SDK's write stream exists), recorded in the
    episode's trace, and not passed on. A line longer than MAX_FRAME_BYTES is read to its end in bounded chunks and
    refused, so it never sits in memory whole. Blank lines are skipped (some clients send them between frames).

    The end of input waits up to ANSWER_GRACE_S for the requests passed on to be answered (`answered`): the SDK
    cancels what is under way when its input ends, so a client that sends its last request and closes stdin (input
    piped from a file) lost that request's answer, though the call was made and traced. A call a latency hazard
    holds is not waited for: the client left it, and the episode's end records it as cancelled, as before."""

    def __init__(self, wire: IO[bytes], episode: Episode, reader: asyncio.StreamReader | None = None) -> None:
        """`reader`: the wire as the event loop reads it (pipes.py); without one, lines are read in a thread."""
        self.wire = wire
        self.reader = reader
        self.episode = episode
        self.replies: ObjectSendStream[SessionMessage] | None = None
        self.paced_by: PipeWriter | None = None
        self.unanswered: set[str | int] = set()

    def __aiter__(self) -> CheckedLines:
        return self

    async def _readline(self) -> bytes:
        if self.reader is None:
            return await anyio.to_thread.run_sync(self.wire.readline, MAX_FRAME_BYTES + 1)
        try:
            return await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the last line, without its newline
            return exc.partial
        except asyncio.LimitOverrunError as exc:  # as the thread's readline would: the first MAX_FRAME_BYTES + 1
            return await self.reader.readexactly(min(exc.consumed, MAX_FRAME_BYTES + 1))

    async def _skip(self) -> int:
        if self.reader is None:
            return await anyio.to_thread.run_sync(self._skip_rest)
        skipped = 0
        while True:
            try:
                skipped += len(await self.reader.readuntil(b"\n"))
                return skipped
            except asyncio.LimitOverrunError as exc:
                skipped += len(await self.reader.readexactly(exc.consumed))
            except asyncio.IncompleteReadError as exc:
                return skipped + len(exc.partial)

    async def __anext__(self) -> str:
        while True:
            if self.paced_by is not None and self.paced_by.backlogged():
                await self.paced_by.drained()  # a client that does not read its replies gets no more served
            line = await self._readline()
            if not line:
                with anyio.move_on_after(ANSWER_GRACE_S):
                    while len(self.unanswered) > len(self.episode.waiting):
                        await anyio.sleep(0.01)
                raise StopAsyncIteration
            if len(line) > MAX_FRAME_BYTES and not line.endswith(b"\n"):
                size = len(line) + await self._skip()
                await self._refuse(Refusal(INVALID_REQUEST, f"Invalid Request: a frame of {size} bytes exceeds "
                                                             f"{MAX_FRAME_BYTES}"))  # fmt: skip
                continue
            if not line.strip():
                continue
            frame = parse_frame(line)
            if not isinstance(frame, Refusal):
                self._note(frame)
                return line.decode("utf-8")
            await self._refuse(frame)

    def _note(self, frame: dict[str, Any]) -> None:
        """Keep the id of a request passed on until it is answered; a request the client cancels is not answered."""
        method, request_id = frame.get("method"), frame.get("id")
        if request_id is not None and isinstance(method, str):
            self.unanswered.add(request_id)
        elif method == "notifications/cancelled" and isinstance(frame.get("params"), dict):
            self.answered(frame["params"].get("requestId"))

    def answered(self, request_id: object) -> None:
        self.unanswered.discard(request_id)

    def _skip_rest(self) -> int:
        skipped = 0
        while True:
            chunk = self.wire.readline(1 << 20)
            skipped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return skipped

    async def _refuse(self, refusal: Refusal) -> None:
        with contextlib.suppress(StorageError):  # the trace has said once that it cannot be written
            self.episode.record_frame_refused(
                code=refusal.code, message=refusal.message, id=refusal.id, method=refusal.method, replied=refusal.reply
            )
        if refusal.reply and self.replies is not None:
            error = types.JSONRPCError(
                jsonrpc="2.0", id=refusal.id, error=types.ErrorData(code=refusal.code, message=refusal.message)
            )
            await self.replies.send(SessionMessage(error))


class AnswerWatch:
    """The SDK's write stream for its answers, telling `lines` of each request answered (a WriteStream)."""

    def __init__(self, stream: ObjectSendStream[SessionMessage], lines: CheckedLines) -> None:
        self.stream = stream
        self.lines = lines

    async def send(self, item: SessionMessage, /) -> None:
        await self.stream.send(item)  # taken by the SDK's writer, which writes it before it ends
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self.lines.answered(item.message.id)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> AnswerWatch:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stream.__aexit__(*exc)


async def serve_stdio(episode: Episode, server: Any = None) -> None:
    """Serve `episode` on this process's stdin/stdout; `server` replaces the scenario server (a proxy's). Over pipes
    the event loop reads and writes the wire itself (pipes.py); otherwise the SDK writes stdout."""
    server = server if server is not None else single_episode_server(episode)
    wire = claim_stdin()
    lines = CheckedLines(wire, episode, await read_lines(wire) if watchable(wire) else None)
    out = claim_stdout() if lines.reader is not None else None
    stdout = await PipeWriter.open(out) if out is not None and watchable(out) else None
    lines.paced_by = stdout
    if stdout is None and out is not None:  # not a pipe after all: the SDK claims fd 1 itself
        os.dup2(out.fileno(), 1)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_stop_on_signal, episode)
            async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, stdout)) as (read_stream, write_stream):
                lines.replies = write_stream
                answers = AnswerWatch(write_stream, lines)
                await server.run(read_stream, answers, server.create_initialization_options())
            group.cancel_scope.cancel()
    finally:
        episode.end("disconnected")

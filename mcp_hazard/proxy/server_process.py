"""The stdio server the relay starts: its process, frames written to its stdin, lines read from its stdout (each
bounded), and the relay's own requests to it with their answers.

The relay (relay.py) routes frames between the client and this server; what belongs to the server's side alone, the
process and the requests the episode itself sends, is here. Ids: the relay's own requests and the client's forwarded
ones share one id space, allocated here, so they never collide.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from itertools import count
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from mcp_hazard.errors import UserError
from mcp_hazard.proxy.lines import Lines
from mcp_hazard.proxy.server_frames import ServerFrames, fault_budget
from mcp_hazard.proxy.stderr_log import open_stderr_log
from mcp_hazard.proxy.upstream_errors import LOST, UpstreamError, timed_out
from mcp_hazard.proxy.upstream_info import UpstreamSource


class ServerProcess:
    """The server as a child process speaking JSON-RPC lines (the 2025-11-25 and 2026-07-28 stdio transport)."""

    def __init__(self, source: UpstreamSource, *, own_group: bool = False) -> None:
        self.source = source
        self.own_group = own_group and sys.platform != "win32"  # a process group of its own, closed as a whole
        self.process: Process | None = None
        self.ids = count(1)
        self.asked: dict[int, anyio.Event] = {}
        self.answers: dict[int, dict[str, Any]] = {}
        self.budget = fault_budget()  # the log lines its faults may take

    async def start(self) -> ByteReceiveStream:
        """Start the server; its stdout, for `read`. Its stderr goes where the source says (a log file, appended),
        else to ours."""
        source = self.source
        env = {**os.environ, **dict(source.env)} if source.env else None
        log = open_stderr_log(source.stderr_log)
        try:
            self.process = await anyio.open_process(list(source.argv), env=env, cwd=source.cwd, stderr=log,
                                                    start_new_session=self.own_group)  # fmt: skip
        except OSError as exc:
            raise UserError(f"cannot start the upstream server ({source.label()}): {exc.strerror or exc}") from None
        finally:
            if log is not None:
                log.close()  # the server holds its own descriptor
        assert self.process.stdin is not None and self.process.stdout is not None
        return self.process.stdout

    def next_id(self) -> int:
        return next(self.ids)

    async def close(self) -> None:
        """Close the server as its own client would: stdin closed, then terminate, then kill, two seconds apart (its
        whole process group, when it has one: a server started through npx is a process of npx's)."""
        process = self.process
        if process is None:
            return
        with anyio.CancelScope(shield=True):
            if process.stdin is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await process.stdin.aclose()
            with anyio.move_on_after(2):
                await process.wait()
            if self.own_group:
                from mcp.os.posix.utilities import terminate_posix_process_tree

                await terminate_posix_process_tree(process, 2.0)
            elif process.returncode is None:
                process.terminate()
                with anyio.move_on_after(2):
                    await process.wait()
            if process.returncode is None:
                process.kill()

    def terminate(self) -> None:
        """Stop a running server now (the relay was signalled to stop)."""
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()

    async def send(self, frame: dict[str, Any]) -> None:
        await self.send_line(json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))

    async def send_line(self, data: bytes) -> None:
        """One frame as JSON text, without its newline."""
        assert self.process is not None and self.process.stdin is not None
        try:
            await self.process.stdin.send(data + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise UpstreamError(LOST, "the server's connection was lost (its stdin is closed)") from None

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The episode's own request to the server (a forwarded call, a fresh tool list); cancelled, it tells the
        server so."""
        up = self.next_id()
        done = self.asked[up] = anyio.Event()
        try:
            await self.send({"jsonrpc": "2.0", "id": up, "method": method, "params": params})
            with anyio.move_on_after(self.source.timeout):
                await done.wait()
            if not done.is_set():
                await self.cancel(up)
                raise timed_out(method, self.source.timeout)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.cancel(up)
            raise
        finally:
            self.asked.pop(up, None)
        answer = self.answers.pop(up)
        if "error" in answer:  # its shape is checked (server_frames.py)
            error = answer["error"]
            raise UpstreamError(error["code"], error["message"], error.get("data"))
        return dict(answer["result"])

    async def cancel(self, up: int, reason: str | None = None) -> None:
        """Tell the server a request of ours is no longer wanted."""
        params: dict[str, Any] = {"requestId": up, **({"reason": reason} if reason else {})}
        with contextlib.suppress(UpstreamError):
            await self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})

    async def read(self, stdout: ByteReceiveStream, handle: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Read the server's frames until its stdout closes: an answer to one of our own requests settles it,
        every other frame goes to `handle`. At the end every request still waiting fails."""
        frames = ServerFrames(Lines(stdout), self.source.label(), self.budget)
        while (frame := await frames.next()) is not None:
            if not self._settle(frame):
                await handle(frame)
        self._lost()

    def _settle(self, frame: dict[str, Any]) -> bool:
        """Whether `frame` answers one of our own requests (and if so, hand the answer to the one waiting)."""
        if "method" in frame:
            return False
        up = frame.get("id")
        if isinstance(up, int) and up in self.asked:
            self.answers[up] = frame
            self.asked[up].set()
            return True
        return False

    def _lost(self) -> None:
        for up, event in list(self.asked.items()):
            self.answers[up] = {"error": {"code": LOST, "message": "the server's connection was lost"}}
            event.set()

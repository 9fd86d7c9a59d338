"""The stdio wire, claimed from fds 0 and 1 and read and written by the event loop itself.

The SDK reads stdin and writes stdout through worker threads: a thread hop to read each line, and two more to write
and flush each reply. Over a pipe the event loop can do both without them, which is most of what a stdio call costs
beyond the tool's own work. A wire that is not a pipe or a socket (a regular file, the null device, a terminal) is
read and written the SDK's way: the event loop cannot wait on a file, nor on every device.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from typing import IO

from mcp_hazard.server.frames import MAX_FRAME_BYTES


def claim_stdin() -> IO[bytes]:
    """The wire, from a private duplicate of fd 0; fd 0 itself then reads the null device, as the SDK arranges when
    it reads stdin itself, so a behaviour or child process that reads stdin cannot steal frames."""
    try:
        private = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        return sys.stdin.buffer
    return os.fdopen(private, "rb", closefd=False)


def claim_stdout() -> IO[bytes] | None:
    """The wire, from a private duplicate of fd 1; fd 1 itself then writes to stderr, as the SDK arranges, so a stray
    print from a behaviour never lands between frames. None when fd 1 cannot be claimed (the SDK's way is used)."""
    try:
        private = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        return None
    return os.fdopen(private, "wb", closefd=False)


def watchable(wire: IO[bytes]) -> bool:
    """Whether the event loop can wait on this file: a pipe or a socket."""
    try:
        mode = os.fstat(wire.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def read_lines(wire: IO[bytes]) -> asyncio.StreamReader:
    """A reader of the wire's lines on the running event loop; a line may be up to MAX_FRAME_BYTES."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME_BYTES + 1)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), wire)
    return reader


class PipeWriter:
    """Text frames to the wire for the SDK's stdio transport (its `stdout`), written by the event loop: a reply is
    handed to the pipe at once, and `flush` waits only while the client is not reading."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    @classmethod
    async def open(cls, wire: IO[bytes]) -> PipeWriter:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, wire)
        transport.set_write_buffer_limits(high=0)  # `flush` returns once the kernel has every byte, as a file's does
        return cls(asyncio.StreamWriter(transport, protocol, None, loop))

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()

    def backlogged(self) -> bool:
        """Whether replies are waiting for the client to read the ones before them (the pipe is full)."""
        return self.writer.transport.get_write_buffer_size() > 0

    async def drained(self) -> None:
        """Wait until the client has read every reply written so far (or has gone)."""
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

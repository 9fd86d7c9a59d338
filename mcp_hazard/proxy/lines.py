"""Bounded JSON-RPC lines from the frame relay's two pipes: the client's stdin and the server's stdout.

A line longer than MAX_FRAME_BYTES is read to its end in bounded chunks and refused (the client's) or reported with its
two ends (the server's: server_frames.py reads the id it answers there), so it never sits in memory whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import IO, Any

import anyio
from anyio.abc import ByteReceiveStream

from mcp_hazard.server.frames import MAX_FRAME_BYTES, Refusal, parse_frame

READ_CHUNK = 1 << 16


async def read_client_frames(
    stdin: IO[bytes], handle: Callable[[dict[str, Any]], Awaitable[None]], refuse: Callable[[Refusal], None]
) -> None:
    """Frames from stdin until it closes, read by the event loop itself (a thread hop per line would add to every
    call): each parsed frame to `handle`, each line that is not one to `refuse`."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME_BYTES + 1)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
            if not line:
                return
        except asyncio.LimitOverrunError:
            await _skip_rest(reader)
            refuse(Refusal(-32600, f"Invalid Request: a frame exceeds {MAX_FRAME_BYTES} bytes"))
            continue
        if not line.strip():
            continue
        frame = parse_frame(line)
        if isinstance(frame, Refusal):
            refuse(frame)
            continue
        await handle(frame)


async def _skip_rest(reader: asyncio.StreamReader) -> None:
    """Drop the rest of an oversize line in bounded chunks."""
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


EDGE = 256
"""How much of each end of an oversize line is kept: enough to read the request id it answers."""


@dataclass(frozen=True)
class Oversize:
    """A line longer than MAX_FRAME_BYTES, read to its end and dropped: its size, and its first and last bytes."""

    size: int
    head: bytes
    tail: bytes


class Lines:
    """Lines from a byte stream, each at most MAX_FRAME_BYTES (a longer one is read to its end and reported as
    `Oversize`, so it never sits in memory whole)."""

    def __init__(self, stream: ByteReceiveStream) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.skipping = 0
        self.head = b""
        self.tail = b""

    async def next(self) -> bytes | Oversize | None:
        """A line (without its newline); an oversize line's size and ends; None at the end."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                if self.skipping:
                    size, self.skipping = self.skipping + len(line), 0
                    return Oversize(size, self.head, (self.tail + line)[-EDGE:])
                return line
            if len(self.buffer) > MAX_FRAME_BYTES:
                if not self.skipping:
                    self.head = bytes(self.buffer[:EDGE])
                self.tail = bytes(self.buffer[-EDGE:])
                self.skipping += len(self.buffer)
                self.buffer.clear()
            try:
                chunk = await self.stream.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return None
            self.buffer.extend(chunk)

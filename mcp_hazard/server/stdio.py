"""Serve one episode over stdio: one process, one agent attempt."""

from __future__ import annotations

import os
import signal
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

from mcp_hazard.server.app import build_server
from mcp_hazard.server.episode import Episode


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


async def serve_stdio(episode: Episode) -> None:
    server = single_episode_server(episode)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_stop_on_signal, episode)
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()
    finally:
        episode.end("disconnected")

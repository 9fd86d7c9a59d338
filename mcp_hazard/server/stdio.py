"""Serve one episode over stdio: one process, one agent attempt."""

from __future__ import annotations

from typing import Any

from mcp.server.stdio import stdio_server

from mcp_hazard.server.app import build_server
from mcp_hazard.server.episode import Episode


def single_episode_server(episode: Episode) -> Any:
    """A server that answers every request from `episode` (stdio and in-memory connections)."""
    return build_server(lambda ctx: episode)


async def serve_stdio(episode: Episode) -> None:
    server = single_episode_server(episode)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        episode.end("disconnected")

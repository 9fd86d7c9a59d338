"""The HTTP server's own listening socket (server/listen.py)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from mcp_hazard.server.listen import listen


def _accepted_nodelay(host: str) -> int:
    """TCP_NODELAY of a connection asyncio accepts on `listen(host, 0)`, as uvicorn serves it."""

    async def main() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        sock = listen(host, 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        async with server:
            _reader, writer = await asyncio.open_connection(host, sock.getsockname()[1])
            value = await asyncio.wait_for(accepted, 10)
            writer.close()
        return value

    return asyncio.run(main())


def test_accepted_connections_get_tcp_nodelay() -> None:
    """Regression: a socket from `socket.create_server` has proto 0, so asyncio left Nagle on for every connection
    and each streamed response waited ~40 ms for the client's delayed ACK (`serve --http`, `proxy --http`)."""
    sock = listen("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
    assert _accepted_nodelay("127.0.0.1") != 0


def test_accepted_ipv6_connections_get_tcp_nodelay() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 loopback")
    assert _accepted_nodelay("::1") != 0

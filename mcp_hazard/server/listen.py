"""Bind the HTTP server's socket before anything says it is listening.

uvicorn binds only once it starts, and a busy port then surfaces as its own error after our "serving" line (and exit
code 3). Binding first turns that into one line naming the address and the way out, with exit code 2, and lets port 0
pick a free port whose number is then printed.

The socket must say it is TCP (`proto` IPPROTO_TCP, not the 0 `socket.create_server` leaves): asyncio sets
TCP_NODELAY only on accepted sockets whose `proto` is IPPROTO_TCP, and they inherit it from the listening socket.
Without it, Nagle's algorithm and the client's delayed ACK held every streamed response back about 40 ms.
"""

from __future__ import annotations

import errno
import socket

from mcp_hazard.errors import UserError


def listen(host: str, port: int, *, flag: str = "--http") -> socket.socket:
    """A listening TCP socket on (host, port), or a one-line UserError saying why not, naming `flag` as given:
    `--http HOST:PORT` (serve, proxy) or `--port PORT` (run, which listens on 127.0.0.1 only)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, backlog=2048)
        return socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())  # see above
    except OSError as exc:
        where = f"--http {f'[{host}]' if ':' in host else host}:{port}" if flag == "--http" else f"{flag} {port}"
        free = "port 0 for any free one" if flag == "--http" else f"leave {flag} out for any free one"
        if exc.errno == errno.EADDRINUSE:
            raise UserError(f"{where}: the port is already in use (another server is listening there); pick "
                            f"another port, or {free}") from None  # fmt: skip
        if exc.errno == errno.EACCES:
            raise UserError(f"{where}: permission denied (ports below 1024 need privileges); pick a port above "
                            "1024") from None  # fmt: skip
        if exc.errno == errno.EADDRNOTAVAIL:
            raise UserError(f"{where}: this machine has no such address; use 127.0.0.1") from None
        if isinstance(exc, socket.gaierror):
            raise UserError(f"{where}: cannot resolve host {host!r}: {exc.strerror or exc}") from None
        raise UserError(f"{where}: cannot listen: {exc.strerror or exc}") from None

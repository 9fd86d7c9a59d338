"""What `serve --http` and `proxy --http` share: the control token, told once on stderr, and a server that bounds
what each connection may hold (server/connections.py)."""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any


def choose_token(args: argparse.Namespace) -> tuple[str | None, bool]:
    """(the control token, whether it was generated): from --token, $MCP_HAZARD_TOKEN or `secrets`; None with
    --no-token. Chosen before the server binds, so a contradiction is one error line before any "serving" line."""
    from mcp_hazard.server.access import control_token

    return control_token(args.token, no_token=args.no_token)


def announce(token: str | None, generated: bool, base_url: str) -> None:
    """After the "serving" line: a generated token is printed once, as Jupyter does, with a command that uses it; a
    given one never is (its owner knows it); --no-token gets its warning."""
    if token is None:
        print(f"mcp-hazard: warning: --no-token: anyone who reaches {base_url} can create, list and end episodes "
              "and reach every episode's MCP endpoint", file=sys.stderr)  # fmt: skip
    elif generated:
        print(f"mcp-hazard: control token (generated; set one with --token or MCP_HAZARD_TOKEN): {token}",
              f"mcp-hazard:   curl -H 'Authorization: Bearer {token}' {base_url}/episodes", sep="\n",
              file=sys.stderr)  # fmt: skip


def needs(token: str | None) -> str:
    """The end of the "serving" line: what a caller of the control routes must send."""
    return "" if token is None else "; the control routes need 'Authorization: Bearer TOKEN' (or ?token=TOKEN)"


def run_server(app: Any, args: argparse.Namespace, sock: socket.socket) -> None:
    """Serve `app` on the bound socket until interrupted, with the request deadline and connection cap of `args`."""
    from mcp_hazard.server.connections import fit_file_limit, http_server

    http_server(app, fit_file_limit(args.read_timeout, args.max_connections)).run(sockets=[sock])


def shown_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

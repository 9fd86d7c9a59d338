"""A hostile MCP server for the proxy's security tests: raw JSON-RPC lines on stdio, no SDK, so it can write what no
honest server would. Each tool is one attack on the proxy in front of it; `echo` is the good call that must still
answer after each.

    python hostile_upstream.py [--bad-handshake | --garbage-and-exit] [--empty-schema] [--pid-file PATH]
    python hostile_upstream.py --http PORT_FILE [--empty-schema]

`--bad-handshake` writes a line that is not UTF-8 before its handshake answer; `--garbage-and-exit` writes one and
exits before any answer; `--http` serves Streamable HTTP on a free port of 127.0.0.1 instead, and writes the port
to PORT_FILE; `--empty-schema` lists a tool whose `inputSchema` is `{}`; `--pid-file` writes the pid of the process
that started it (the proxy), so a test can read that process's peak memory.
"""

from __future__ import annotations

import json
import os
import sys
import time

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
HUGE_BYTES = 50 * 1024 * 1024
DEEP = 5_000
FLOOD = 20_000
SHOUT_MIB = 80


def line(frame: dict[str, object]) -> bytes:
    return json.dumps(frame, separators=(",", ":")).encode("utf-8") + b"\n"


def head(request_id: int) -> bytes:
    """The start of an answer, as most servers write it: jsonrpc, then id, then the result."""
    return b'{"jsonrpc":"2.0","id":' + str(request_id).encode() + b',"result":'


def tools(empty_schema: bool) -> list[dict[str, object]]:
    echo_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    listed: list[dict[str, object]] = [
        {"name": "echo", "description": "Say the text back.", "inputSchema": echo_schema,
         "annotations": {"readOnlyHint": True}},
    ]  # fmt: skip
    for name in ATTACK:
        listed.append({"name": name, "description": f"Attack: {name}.", "inputSchema": {"type": "object"}})
    if empty_schema:
        listed.append({"name": "blank", "description": "A tool whose input schema is {}.", "inputSchema": {}})
    return listed


def call(request_id: int, name: str, arguments: dict[str, object]) -> bytes | None:
    """What the server writes for one tool call (None: nothing, ever)."""
    if name in ("echo", "blank"):
        text = str(arguments.get("text", "blank"))
        return line({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
    if name in ATTACK:
        return ATTACK[name](request_id)
    return line({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})


def _flood(request_id: int) -> bytes:
    note = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "flooded"}]}}
    return note * FLOOD + line(answer)


def _news_flood(request_id: int) -> bytes:
    note = b'{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}\n'
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "told"}]}}
    return note * FLOOD + line(answer)


def _shout(request_id: int) -> bytes:
    """80 MiB on stderr, then an answer."""
    sys.stderr.buffer.write((b"shouting " + b"!" * 1014 + b"\n") * (SHOUT_MIB * 1024))
    sys.stderr.buffer.flush()
    return line({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "shouted"}]}})


ATTACK = {
    "hang": lambda i: None,
    "truncated": lambda i: head(i) + b'{"content":[{"type":"text","te\n',
    "not_utf8": lambda i: head(i) + b'{"content":[{"type":"text","text":"\xff\xfe bad"}]}}\n',
    "wrong_id": lambda i: line({"jsonrpc": "2.0", "id": i + 1000, "result": {"content": []}}),
    "huge": lambda i: head(i) + b'{"content":[{"type":"text","text":"' + b"x" * HUGE_BYTES + b'"}]}}\n',
    "deep": lambda i: head(i) + b'{"content":[],"structuredContent":' + b'{"a":' * DEEP + b"1" + b"}" * DEEP
    + b"}}\n",
    # deep nesting written the way a Node server orders keys: the id last
    "deep_list": lambda i: b'{"result":{"content":[],"structuredContent":{"a":' + b"[" * DEEP + b"]" * DEEP
    + b'}},"jsonrpc":"2.0","id":' + str(i).encode() + b"}\n",
    "surrogate": lambda i: head(i) + b'{"content":[{"type":"text","text":"half \\ud800 a pair"}]}}\n',
    "flood": _flood,
    "news_flood": _news_flood,
    "shout": _shout,
}  # fmt: skip


def answer(frame: dict[str, object], flags: list[str]) -> bytes | None:
    """What the server writes for one frame it read (None: nothing)."""
    method, request_id = frame.get("method"), frame.get("id")
    params = frame.get("params") or {}
    assert isinstance(params, dict)
    if not isinstance(request_id, int) or method is None:
        return None  # notifications and answers
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
        garbage = b"\xff\xfe not utf-8 \xc3\x28\n" if "--bad-handshake" in flags else b""
        return garbage + line({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "hostile", "version": "1.0"}}})  # fmt: skip
    if method == "ping":
        return line({"jsonrpc": "2.0", "id": request_id, "result": {}})
    if method == "tools/list":
        return line({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools("--empty-schema" in flags)}})
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        return call(request_id, str(params.get("name")), arguments if isinstance(arguments, dict) else {})
    return line({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


def serve_http(flags: list[str]) -> None:
    """Streamable HTTP without sessions or streams: each POST answered with one JSON body (or never)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            written = answer(json.loads(body), flags)
            if written is None and b'"id"' in body:
                time.sleep(3600)  # a request never answered
            if written is None:
                self.send_response(202)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(written)))
            self.end_headers()
            self.wfile.write(written)

        def do_GET(self) -> None:
            self.send_response(405)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass  # the proxy hung up on an answer it refused

    server = Server(("127.0.0.1", 0), Handler)
    with open(flags[flags.index("--http") + 1], "w", encoding="utf-8") as handle:
        handle.write(str(server.server_address[1]))
    server.serve_forever()


def main() -> None:
    flags = sys.argv[1:]
    if "--pid-file" in flags:
        with open(flags[flags.index("--pid-file") + 1], "w", encoding="utf-8") as handle:
            handle.write(str(os.getppid()))
    if "--http" in flags:
        serve_http(flags)
        return
    out = sys.stdout.buffer
    if "--garbage-and-exit" in flags:
        out.write(b"\xff\xfe not utf-8\n")
        out.flush()
        return
    for read in sys.stdin.buffer:
        if read.strip():
            written = answer(json.loads(read), flags)
            if written is not None:
                out.write(written)
                out.flush()


if __name__ == "__main__":
    main()

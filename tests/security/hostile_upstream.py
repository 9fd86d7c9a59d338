"""A hostile MCP server for the proxy's security tests: raw JSON-RPC lines on stdio, no SDK, so it can write what no
honest server would. Each tool is one attack on the proxy in front of it; `echo` is the good call that must still
answer after each.

    python hostile_upstream.py [--bad-handshake] [--empty-schema] [--pid-file PATH]

`--bad-handshake` writes a line that is not UTF-8 before its handshake answer; `--empty-schema` lists a tool whose
`inputSchema` is `{}`; `--pid-file` writes the pid of the process that started it (the proxy), so a test can read
that process's peak memory.
"""

from __future__ import annotations

import json
import os
import sys

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
ATTACKS = ("hang", "truncated", "not_utf8", "wrong_id", "huge", "deep", "surrogate", "flood", "deep_list")
HUGE_BYTES = 50 * 1024 * 1024
DEEP = 5_000
FLOOD = 20_000

out = sys.stdout.buffer


def write(data: bytes) -> None:
    out.write(data)
    out.flush()


def send(frame: dict[str, object]) -> None:
    write(json.dumps(frame, separators=(",", ":")).encode("utf-8") + b"\n")


def head(request_id: int) -> bytes:
    """The start of an answer, as most servers write it: jsonrpc, then id, then the result."""
    return b'{"jsonrpc":"2.0","id":' + str(request_id).encode() + b',"result":'


def tools(empty_schema: bool) -> list[dict[str, object]]:
    echo_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    listed: list[dict[str, object]] = [
        {"name": "echo", "description": "Say the text back.", "inputSchema": echo_schema,
         "annotations": {"readOnlyHint": True}},
    ]  # fmt: skip
    for name in ATTACKS:
        listed.append({"name": name, "description": f"Attack: {name}.", "inputSchema": {"type": "object"}})
    if empty_schema:
        listed.append({"name": "blank", "description": "A tool whose input schema is {}.", "inputSchema": {}})
    return listed


def call(request_id: int, name: str, arguments: dict[str, object]) -> None:
    if name in ("echo", "blank"):
        text = str(arguments.get("text", "blank"))
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
    elif name == "hang":
        pass  # never answered
    elif name == "truncated":
        write(head(request_id) + b'{"content":[{"type":"text","te\n')
    elif name == "not_utf8":
        write(head(request_id) + b'{"content":[{"type":"text","text":"\xff\xfe bad"}]}}\n')
    elif name == "wrong_id":
        send({"jsonrpc": "2.0", "id": request_id + 1000, "result": {"content": [{"type": "text", "text": "x"}]}})
    elif name == "huge":
        write(head(request_id) + b'{"content":[{"type":"text","text":"')
        chunk = b"x" * (1024 * 1024)
        for _ in range(HUGE_BYTES // len(chunk)):
            out.write(chunk)
        write(b'"}]}}\n')
    elif name == "deep":
        nested = b'{"a":' * DEEP + b"1" + b"}" * DEEP
        write(head(request_id) + b'{"content":[],"structuredContent":' + nested + b"}}\n")
    elif name == "deep_list":  # deep nesting written the way a Node server orders keys: the id last
        nested = b"[" * DEEP + b"]" * DEEP
        write(b'{"result":{"content":[],"structuredContent":{"a":' + nested + b'}},"jsonrpc":"2.0","id":'
              + str(request_id).encode() + b"}\n")  # fmt: skip
    elif name == "surrogate":
        write(head(request_id) + b'{"content":[{"type":"text","text":"half \\ud800 a pair"}]}}\n')
    elif name == "flood":
        note = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
        for start in range(0, FLOOD, 1000):
            out.write(note * min(1000, FLOOD - start))
        out.flush()
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "flooded"}]}})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})


def main() -> None:
    flags = sys.argv[1:]
    if "--pid-file" in flags:
        with open(flags[flags.index("--pid-file") + 1], "w", encoding="utf-8") as handle:
            handle.write(str(os.getppid()))
    empty_schema = "--empty-schema" in flags
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        frame = json.loads(line)
        method, request_id = frame.get("method"), frame.get("id")
        params = frame.get("params") or {}
        if request_id is None or method is None:
            continue  # notifications and answers
        if method == "initialize":
            if "--bad-handshake" in flags:
                write(b"\xff\xfe not utf-8 \xc3\x28\n")
            asked = params.get("protocolVersion")
            version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "hostile", "version": "1.0"}}})  # fmt: skip
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools(empty_schema)}})
        elif method == "tools/call":
            call(request_id, str(params.get("name")), params.get("arguments") or {})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()

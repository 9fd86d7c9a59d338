"""Malformed JSON-RPC frames through real transports: each gets a one-line JSON-RPC error, the next good request
still works, and the trace records every refusal as `frame_refused`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import REPO_ROOT, TRAVEL, start_http_server

pytestmark = pytest.mark.e2e

LIST = b'{"jsonrpc":"2.0","id":"ID","method":"tools/list","params":'
CALL = b'{"jsonrpc":"2.0","id":"ID","method":"tools/call","params":'
DEEP = LIST + b'{"x":' + b"[" * 10_000 + b"]" * 10_000 + b"}}"
DEEP_ID_LAST = b'{"jsonrpc":"2.0","method":"tools/list","params":{"x":' + b"[" * 10_000 + b"]" * 10_000
DEEP_ID_LAST += b'},"id":"ID"}'
# (name, raw frame with "ID" standing for the request id, expected code, whether the reply carries that id). The
# id is echoed whenever it can be read, even from a frame the strict parser refuses (NaN, too deep, cut short).
BAD_FRAMES: list[tuple[str, bytes, int, bool]] = [
    (
        "lone-surrogate-escape",
        LIST + b'{"x":"\\ud800"}}',
        -32700,
        True,
    ),
    (
        "surrogate-as-utf8-bytes",
        LIST + b'{"x":"\xed\xa0\x80"}}',
        -32700,
        True,
    ),
    ("invalid-utf8", LIST + b'{"x":"\xff"}}', -32700, True),
    ("deep-nesting", DEEP, -32600, True),
    ("deep-nesting-id-last", DEEP_ID_LAST, -32600, True),
    ("params-list", LIST + b"[1,2]}", -32602, True),
    ("call-params-list", CALL + b'["get_fare"]}', -32602, True),
    ("call-name-number", CALL + b'{"name":5}}', -32602, True),
    (
        "call-arguments-list",
        CALL + b'{"name":"get_fare","arguments":[1]}}',
        -32602,
        True,
    ),
    ("not-json", b'{"jsonrpc":"2.0","id":"ID",', -32700, True),
    ("nan", LIST + b'{"x":NaN}}', -32700, True),
    ("nan-id-last", b'{"jsonrpc":"2.0","method":"tools/list","params":{"x":[Infinity]},"id":"ID"}', -32700, True),
    ("id-only-inside-params", b'{"jsonrpc":"2.0","method":"tools/list","params":{"id":"ID","x":NaN}}', -32700, False),
    ("batch", b'[{"jsonrpc":"2.0","id":"ID","method":"tools/list"}]', -32600, False),
    ("number", b"42", -32600, False),
    ("wrong-version", b'{"jsonrpc":"1.0","id":"ID","method":"tools/list"}', -32600, True),
    ("no-method", b'{"jsonrpc":"2.0","id":"ID"}', -32600, True),
    ("method-number", b'{"jsonrpc":"2.0","id":"ID","method":7}', -32600, True),
]
PARAMS = pytest.mark.parametrize(("name", "frame", "code", "has_id"), BAD_FRAMES, ids=[case[0] for case in BAD_FRAMES])
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def _check_error(reply: dict[str, Any], code: int, expected_id: str | None) -> None:
    assert reply["error"]["code"] == code, reply
    message = reply["error"]["message"]
    assert "\n" not in message and len(message) <= 200, message
    assert "validation error" not in message.lower() and "pydantic" not in message.lower(), message
    assert reply["id"] == expected_id, reply


class _StdioServer:
    """`mcp-hazard serve scenarios/travel.yaml` with raw bytes on its stdin and replies read line by line."""

    def __init__(self, trace_dir: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_hazard", "serve", str(TRAVEL), "--trace-dir", str(trace_dir),
             "--episode-id", "raw"],
            cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    def send(self, frame: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        """The next line on stdout; a deadline guard (not a timing assertion) turns a missing reply into a failure."""
        assert self.process.stdout is not None
        box: list[bytes] = []
        reader = threading.Thread(target=lambda: box.append(self.process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(60)
        assert box and box[0], "no reply from the server"
        return dict(json.loads(box[0]))

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(60)
        return self.process.stderr.read().decode("utf-8", "replace")


def test_stdio_answers_every_malformed_frame_and_keeps_serving(tmp_path: Path) -> None:
    server = _StdioServer(tmp_path)
    try:
        server.send(json.dumps(INITIALIZE).encode())
        assert server.reply()["result"]["protocolVersion"] == "2025-11-25"
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for number, (name, frame, code, has_id) in enumerate(BAD_FRAMES):
            request_id = f"bad-{number}"
            server.send(frame.replace(b'"ID"', json.dumps(request_id).encode()))
            _check_error(server.reply(), code, request_id if has_id else None)
            server.send(json.dumps({"jsonrpc": "2.0", "id": f"good-{number}", "method": "tools/list"}).encode())
            good = server.reply()
            assert good["id"] == f"good-{number}" and "get_fare" in json.dumps(good["result"]), name
        server.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}')  # no reply: a notification
        server.send(json.dumps({"jsonrpc": "2.0", "id": "last", "method": "tools/list"}).encode())
        assert server.reply()["id"] == "last"
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr, stderr
    events = [json.loads(line) for line in (tmp_path / "raw.jsonl").read_text(encoding="utf-8").splitlines()]
    refused = [event for event in events if event["type"] == "frame_refused"]
    assert [event["code"] for event in refused] == [code for _, _, code, _ in BAD_FRAMES] + [-32602]
    assert refused[-1]["replied"] is False and refused[-1]["method"] == "notifications/cancelled"
    assert events[0]["type"] == "episode_started"


def test_a_stdio_client_whose_every_frame_was_refused_still_leaves_its_trace(tmp_path: Path) -> None:
    """An agent that sends only malformed frames and leaves: the episode never started (no good request), and its
    refusals, kept until it did, were dropped with it, so no trace was on disk. They are its whole record."""
    server = _StdioServer(tmp_path)
    try:
        server.send(json.dumps(INITIALIZE).encode())
        assert "result" in server.reply()
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        server.send(CALL.replace(b'"ID"', b'"only"') + b'{"name":"get_fare","arguments":"economy"}}')
        _check_error(server.reply(), -32602, "only")
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr, stderr
    events = [json.loads(line) for line in (tmp_path / "raw.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [event["type"] for event in events] == ["episode_started", "frame_refused", "episode_ended"]
    assert events[1]["id"] == "only" and events[2]["reason"] == "disconnected"


def test_a_client_sending_only_bad_frames_takes_twenty_log_lines_and_all_are_traced(tmp_path: Path) -> None:
    """The log is the operator's (over stdio, the client's own log of its server): an agent that sends nothing but
    malformed frames gets each answered and traced, and the log a line for each of the first 20, then one line
    saying the rest are traced only. It took a line each (2,000 lines for 2,000 frames over HTTP)."""
    server = _StdioServer(tmp_path)
    try:
        server.send(json.dumps(INITIALIZE).encode())
        assert "result" in server.reply()
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        server.send(json.dumps({"jsonrpc": "2.0", "id": "first", "method": "tools/list"}).encode())
        assert server.reply()["id"] == "first"
        for number in range(50):
            server.send(LIST.replace(b'"ID"', json.dumps(f"bad-{number}").encode()) + b"[1]}")
            _check_error(server.reply(), -32602, f"bad-{number}")
    finally:
        stderr = server.close()
    lines = stderr.splitlines()
    assert sum("frame refused" in line for line in lines) == 20, stderr
    assert sum("its next refused frames are traced, not logged (20 were)" in line for line in lines) == 1, stderr
    events = [json.loads(line) for line in (tmp_path / "raw.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sum(event["type"] == "frame_refused" for event in events) == 50


def test_a_stdio_client_that_reads_no_replies_is_served_no_further(tmp_path: Path) -> None:
    """A client that sends request after request and reads none of the replies: once the pipe to it is full, the
    server reads no more requests until the client reads, as a socket's flow control would have it. It used to read
    and serve every request sent and hold each reply in memory (2 GB after 45 s of tools/list). Once the client
    reads, every request it sent is answered."""
    most = 5_000  # the old server read this many (80 MB) without a pause; the pipes and the reader hold about 520
    server = _StdioServer(tmp_path)
    sent, stop = [0], threading.Event()

    def flood() -> None:
        while not stop.is_set() and sent[0] < most:
            server.send(LIST.replace(b'"ID"', str(sent[0]).encode()) + b" " * 16_384 + b"{}}")
            sent[0] += 1

    try:
        server.send(json.dumps(INITIALIZE).encode())
        assert "result" in server.reply()
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        writer = threading.Thread(target=flood, daemon=True)
        writer.start()
        seen, still = -1, 0
        while still < 6 and writer.is_alive():  # stalled: no request went out for 3 s
            time.sleep(0.5)
            still, seen = (still + 1, seen) if sent[0] == seen else (0, sent[0])
        served = [json.loads(line)["type"] for line in (tmp_path / "raw.jsonl").read_text("utf-8").splitlines()]
        assert sent[0] < most, "the server read every request while its client read no reply"
        assert served.count("tools_listed") < 200, served.count("tools_listed")
        stop.set()
        answered = set()
        while writer.is_alive() or len(answered) < sent[0]:
            reply = server.reply()
            assert "tools" in reply["result"], reply
            answered.add(reply["id"])
            writer.join(0 if len(answered) < sent[0] else 1)
        assert answered == set(range(sent[0]))
    finally:
        stop.set()
        stderr = server.close()
    assert "Traceback" not in stderr, stderr


def _sse_or_json(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


def test_http_answers_every_malformed_frame_in_one_line_and_keeps_serving(tmp_path: Path) -> None:
    server = start_http_server(tmp_path / "traces", tmp_path / "logs")
    try:
        url = server.lazy_url("raw", "scenario=travel&task=fare-class&seed=0")
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        with httpx.Client(timeout=120) as http:
            started = http.post(url, json=INITIALIZE, headers=headers)
            assert started.status_code == 200, started.text
            headers |= {"mcp-session-id": started.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            for number, (name, frame, code, has_id) in enumerate(BAD_FRAMES):
                request_id = f"bad-{number}"
                response = http.post(
                    url, content=frame.replace(b'"ID"', json.dumps(request_id).encode()), headers=headers
                )
                assert response.status_code == 400, (name, response.text)
                _check_error(response.json(), code, request_id if has_id else None)
                good = http.post(url, json={"jsonrpc": "2.0", "id": number, "method": "tools/list"}, headers=headers)
                assert good.status_code == 200 and "get_fare" in json.dumps(_sse_or_json(good)["result"]), name
    finally:
        server.stop()
    assert "Traceback" not in server.stderr()
    trace = tmp_path / "traces" / "raw.jsonl"
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert [e["code"] for e in events if e["type"] == "frame_refused"] == [code for _, _, code, _ in BAD_FRAMES]

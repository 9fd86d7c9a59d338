"""Shared by the HTTP attack tests: a real `mcp-hazard serve --http` subprocess (optionally under a file-descriptor
limit), raw sockets for requests no well-behaved client would send, and the server's peak RSS."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from conftest import REPO_ROOT, TRAVEL, WAIT_S

TOKEN = "control-token-for-attack-tests"
OPERATOR = {"authorization": f"Bearer {TOKEN}"}
START_TIMEOUT = WAIT_S
SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)")
GENERATED = re.compile(r"control token \(generated; [^)]*\): (\S+)")
MODERN = "2026-07-28"
_META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    stderr_path: Path
    trace_dir: Path
    token: str = TOKEN

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def operator(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def peak_rss_mb(self) -> float:
        """The server's peak resident memory (VmHWM, Linux): what it held at its worst, not just now."""
        status = Path(f"/proc/{self.process.pid}/status").read_text(encoding="ascii")
        found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        assert found, status
        return int(found.group(1)) / 1024


def _limit_files(count: int) -> Any:
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return apply


@contextmanager
def serve(
    tmp_path: Path, *flags: str, files: int | None = None, given_token: bool = True, scenario: Path = TRAVEL
) -> Iterator[Served]:
    """`mcp-hazard serve SCENARIO --http 127.0.0.1:0 --token TOKEN FLAGS` (port 0: no race for a port), with at most
    `files` open files when given (soft and hard limit); stopped at the end. Without `given_token`, no token is
    given, as a user who types no flag: the server's generated one is read from its stderr."""
    stderr_path = tmp_path / f"server-{time.monotonic_ns()}.stderr"
    trace_dir = tmp_path / "traces"
    command = [sys.executable, "-m", "mcp_hazard", "serve", str(scenario), "--http", "127.0.0.1:0", "--trace-dir",
               str(trace_dir), *(("--token", TOKEN) if given_token else ()), *flags]  # fmt: skip
    with stderr_path.open("wb") as err:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=err, preexec_fn=_limit_files(files) if files else None)  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            text = stderr_path.read_text(encoding="utf-8", errors="replace")
            found, generated = SERVING.search(text), GENERATED.search(text)
            if found and (given_token or generated):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the server did not start:\n{stderr_path.read_text(errors='replace')}")
        token = TOKEN if given_token or generated is None else generated.group(1)
        yield Served(process, int(found.group(1)), stderr_path, trace_dir, token)
    finally:
        process.terminate()
        try:
            process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=WAIT_S)


def create(server: Served, http: httpx.Client, **fields: Any) -> dict[str, Any]:
    """POST /episodes as the operator."""
    body = {"scenario": "travel", "task": "fare-class", **fields}
    response = http.post(f"{server.base}/episodes", json=body, headers=server.operator)
    assert response.status_code == 201, response.text
    return dict(response.json())


def mcp(http: httpx.Client, url: str, method: str, params: dict[str, Any] | None = None, **headers: str) -> Any:
    """One 2026-07-28 request (no handshake) to an MCP URL; the httpx response."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": _META}}
    sent = {**MCP_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": method, **headers}
    if method == "tools/call" and params:
        sent["mcp-name"] = str(params["name"])
    return http.post(url, json=body, headers=sent)


def still_answers(http: httpx.Client, episode: dict[str, Any]) -> None:
    """The episode's own URL lists its tools: the server kept serving through the attack."""
    listed = mcp(http, episode["mcp_url"], "tools/list")
    assert listed.status_code == 200, listed.text
    assert "get_fare" in listed.text


def one_line_error(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/json"), response.text
    message = response.json()["error"]
    assert isinstance(message, str) and "\n" not in message, message
    return message


def raw(port: int, request: bytes, *, timeout: float = 30.0) -> bytes:
    """Send bytes as they are and read the answer until the server closes or `timeout` passes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and not _wants_more(b"".join(chunks)):
                    break
        except TimeoutError:
            pass
    return b"".join(chunks)


def _wants_more(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return length is not None and len(body) < int(length.group(1))


def status_and_json(answer: bytes) -> tuple[int, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def no_traceback(server: Served) -> None:
    text = server.stderr()
    assert "Traceback" not in text and "ClientDisconnect" not in text, text[-3000:]

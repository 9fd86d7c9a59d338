"""Attacks on the HTTP server, each through a real `mcp-hazard serve --http` subprocess (or, for the session map, a
real uvicorn server in this process) with raw sockets or httpx: the attack, its one-line refusal, no traceback on
the server's stderr, a bound on time and memory, and another episode still answering."""

from __future__ import annotations

import contextlib
import json
import secrets
import select
import socket
import time
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from conftest import WAIT_S

from tests.server.http_support import OPERATOR as INPROCESS_OPERATOR
from tests.server.http_support import serving, travel_registry

from .http_support import (
    MCP_HEADERS,
    OPERATOR,
    TOKEN,
    create,
    mcp,
    no_traceback,
    one_line_error,
    raw,
    serve,
    status_and_json,
    still_answers,
)

pytestmark = pytest.mark.e2e

DEADLINE = WAIT_S
RSS_CEILING_MB = 400.0
"""Generous: the server idles near 80 MB; reading a 600 MB body took it to 1.3 GB."""
NO_EPISODE_HERE = "no episode at this URL"
FILES, CAP, OPENED = 1024, 512, 700
"""A server under a hard limit of FILES open files lowers its cap of 1000 to CAP (half of them); the test opens
OPENED stalled connections."""


def _stranger_attempts(base: str, mine: str, other_id: str) -> list[tuple[str, str, dict[str, object] | None, int]]:
    """(method, url, JSON body, expected status) for what an agent holding only `mine` (its mcp_url) might try."""
    key = mine.partition("?")[2]
    copy = {"scenario": "travel", "task": "fare-class", "seed": 1}  # its own task, without hazards
    return [
        ("GET", f"{base}/episodes", None, 401),
        ("GET", f"{base}/episodes?limit=1000&detail=operator", None, 401),
        ("GET", f"{base}/episodes/{other_id}", None, 401),
        ("DELETE", f"{base}/episodes/{other_id}", None, 401),
        ("GET", f"{base}/scenarios", None, 401),
        ("POST", f"{base}/episodes", copy, 401),
        ("POST", f"{base}/episodes?{key}", copy, 401),
        ("POST", f"{base}/episodes/copy-1/mcp?scenario=travel&task=fare-class&{key}", None, 404),
        ("POST", f"{base}/episodes/copy-2/mcp?scenario=travel&task=fare-class&token={key[4:]}", None, 404),
        ("POST", f"{base}/episodes/{other_id}/mcp?{key}", None, 404),
        ("POST", f"{base}/episodes/{other_id}/mcp", None, 404),
        ("GET", f"{base}/episodes/{other_id}/mcp?{key}", None, 404),
        ("DELETE", f"{base}/episodes/{other_id}/mcp?{key}", None, 404),
    ]


def test_an_agent_holding_its_mcp_url_reaches_its_own_episode_and_nothing_else(tmp_path: Path) -> None:
    """Listing every mcp_url, answering into another episode, making a hazard-free copy of its own task: each is
    refused in one line; a refusal on another's MCP endpoint reads the same whether that episode exists or not."""
    with serve(tmp_path, given_token=False) as server, httpx.Client(timeout=30) as http:  # no flag: the default
        mine = create(server, http, hazards=["transient_error:times=2"], episode_id="mine")
        other = create(server, http, episode_id="other")
        submit = {"name": "submit_answer", "arguments": {"answer": "Standard"}}
        for method, url, body, status in _stranger_attempts(server.base, mine["mcp_url"], "other"):
            if url.endswith("/mcp") or "/mcp?" in url:
                response = mcp(http, url, "tools/call", submit) if method == "POST" else http.request(method, url)
            else:
                response = http.request(method, url, json=body)
            assert response.status_code == status, (method, url, response.text)
            message = one_line_error(response)
            assert (NO_EPISODE_HERE if status == 404 else "control token") in message, message
        unknown = mcp(http, f"{server.base}/episodes/never-made/mcp?{mine['mcp_url'].partition('?')[2]}", "tools/list")
        known = mcp(http, f"{server.base}/episodes/other/mcp?{mine['mcp_url'].partition('?')[2]}", "tools/list")
        assert (unknown.status_code, unknown.text) == (known.status_code, known.text), "no hint that one exists"
        guesses = [mcp(http, f"{server.base}/episodes/other/mcp?key={secrets.token_urlsafe(16)}", "tools/list")
                   for _ in range(100)]  # fmt: skip
        assert {g.status_code for g in guesses} == {404}
        listed = http.get(f"{server.base}/episodes", headers=server.operator).json()["episodes"]
        assert sorted(e["episode_id"] for e in listed) == ["mine", "other"], "nothing was created"
        assert not (server.trace_dir / "copy-1.jsonl").exists() and not (server.trace_dir / "copy-2.jsonl").exists()
        still_answers(http, other)
        still_answers(http, mine)
        shown = http.get(f"{server.base}/episodes/other", headers=server.operator).json()
        assert (shown["answered"], shown["ended"]) == (False, False), "no answer reached the other episode"
    no_traceback(server)


def _stream_chunks(port: int, head: bytes, total: int) -> tuple[int, bytes]:
    """Send `head`, then a chunked body of up to `total` bytes, until the server stops taking it (it answered and
    closed); returns (bytes of body sent, the answer)."""
    sent = 0
    chunk = b"%x\r\n" % 65536 + b"x" * 65536 + b"\r\n"
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        with contextlib.suppress(OSError):  # reset, broken pipe, or a full buffer nobody reads: it stopped reading
            while sent < total:
                sock.sendall(chunk)
                sent += 65536
        with contextlib.suppress(OSError):
            while received := sock.recv(65536):
                answer += received
    return sent, answer


def test_oversized_bodies_are_refused_without_being_read(tmp_path: Path) -> None:
    """A declared 600 MB body is refused before a byte of it is read; a chunked one once 4 MiB have arrived; both on
    `POST /episodes` (413) and on an MCP endpoint (a JSON-RPC -32600), each closing the connection."""
    with serve(tmp_path) as server, httpx.Client(timeout=30) as http:
        episode = create(server, http, episode_id="big")
        mcp_path = episode["mcp_url"].removeprefix(server.base)
        targets = {
            "/episodes": (f"Authorization: Bearer {TOKEN}\r\n", 413),
            mcp_path: ("Accept: application/json, text/event-stream\r\n", 400),
        }
        for path, (extra, status) in targets.items():
            head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
                    f"{extra}").encode()  # fmt: skip
            declared = raw(server.port, head + b"Content-Length: 600000000\r\n\r\n")
            got, body = status_and_json(declared)
            assert got == status, declared
            assert b"connection: close" in declared.lower()
            message = body["error"] if status == 413 else body["error"]["message"]
            assert "600000000 bytes exceeds 4194304" in message and "\n" not in message, message
            sent, answer = _stream_chunks(server.port, head + b"Transfer-Encoding: chunked\r\n\r\n", 64 << 20)
            assert sent < 32 << 20, f"the server read {sent} bytes of a body it should stop at 4 MiB"
            got, body = status_and_json(answer)
            assert got == status and "exceeds 4194304 bytes" in json.dumps(body), answer[:500]
        assert len(http.get(f"{server.base}/episodes", headers=OPERATOR).json()["episodes"]) == 1
        still_answers(http, episode)
        assert server.peak_rss_mb() < RSS_CEILING_MB
    no_traceback(server)


def test_bodies_json_cannot_read_are_a_400_in_one_line(tmp_path: Path) -> None:
    """`POST /episodes` with JSON nested thousands of levels deep (RecursionError in `json.loads`) or with a number of
    5,000 digits (a plain ValueError) was a 500 with a traceback in the server's log; each is now a 400 saying why."""
    deep = b'{"seed": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with serve(tmp_path) as server, httpx.Client(timeout=30) as http:
        episode = create(server, http, episode_id="kept")
        for body, why in ((deep, "nested too deeply"), (b'{"seed": ' + b"9" * 5000 + b"}", "too many digits")):
            answer = http.post(f"{server.base}/episodes", content=body,
                               headers={**OPERATOR, "content-type": "application/json"})  # fmt: skip
            assert answer.status_code == 400, answer.text[:300]
            message = answer.json()["error"]
            assert message.startswith("body is not JSON: ") and why in message and "\n" not in message, message
        # JSON, but a scenario id that is a list (a 500 before: the id was looked up in a dict)
        for scenario in (["travel"], {"id": "travel"}):
            answer = http.post(f"{server.base}/episodes", json={"scenario": scenario, "task": "fare-class"},
                               headers=OPERATOR)  # fmt: skip
            assert answer.status_code == 400, answer.text[:300]
            assert answer.json()["error"].startswith(f"unknown scenario {scenario!r}"), answer.text
        still_answers(http, episode)
    no_traceback(server)


def test_clients_that_leave_mid_body_leave_no_traceback(tmp_path: Path) -> None:
    with serve(tmp_path) as server, httpx.Client(timeout=30) as http:
        episode = create(server, http, episode_id="left")
        mcp_path = episode["mcp_url"].removeprefix(server.base)
        for path in ["/episodes", mcp_path] * 25:
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer "
                             f"{TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, "
                             "text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"scenario\": ".encode())  # fmt: skip
        time.sleep(1)  # let the server notice every one of them
        still_answers(http, episode)
        assert len(http.get(f"{server.base}/episodes", headers=OPERATOR).json()["episodes"]) == 1
    no_traceback(server)
    assert len(server.stderr().splitlines()) <= 4, server.stderr()  # the start lines; nothing per connection


def _closed_within(sock: socket.socket, deadline: float) -> bytes | None:
    """What the server sent before closing `sock`, or None if it was still open at `deadline`."""
    received = b""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return None
        except OSError:
            return received
        if not chunk:
            return received
        received += chunk
    return None


def test_half_sent_requests_are_closed_after_the_read_timeout_and_the_server_keeps_serving(tmp_path: Path) -> None:
    """300 connections that send half a header, 20 half a body and 20 nothing: all closed a little after
    `--read-timeout 2` (half headers with a one-line 408), while a fresh client is served throughout."""
    with serve(tmp_path, "--read-timeout", "2") as server, httpx.Client(timeout=30) as http:
        episode = create(server, http, episode_id="steady")
        held: list[tuple[str, socket.socket]] = []
        try:
            for n in range(340):
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
                if n < 300:
                    sock.sendall(f"POST /episodes HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Le".encode())
                    held.append(("header", sock))
                elif n < 320:
                    sock.sendall(f"POST /episodes HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: "
                                 f"Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                                 "{".encode())  # fmt: skip
                    held.append(("body", sock))
                else:
                    held.append(("nothing", sock))
            still_answers(http, episode)  # while all 340 are held
            deadline = time.monotonic() + 30
            outcomes = [(kind, _closed_within(sock, deadline)) for kind, sock in held]
        finally:
            for _, sock in held:
                sock.close()
        assert all(answer is not None for _, answer in outcomes), "every stalled connection is closed"
        for kind, answer in outcomes:
            assert answer is not None
            if kind == "header":
                status, body = status_and_json(answer)
                assert status == 408 and "did not arrive whole within 2 s" in body["error"], answer
        # A new connection: `http`'s own has been idle past the read timeout, so the server closes it, and a request
        # sent on it just as that happens meets a reset (the keep-alive race any HTTP/1.1 client has).
        with httpx.Client(timeout=30) as fresh:
            still_answers(fresh, episode)
        assert server.peak_rss_mb() < RSS_CEILING_MB
    no_traceback(server)
    lines = server.stderr().splitlines()
    assert len(lines) <= 6, lines  # start lines and at most one summary line, never one per connection


def _room_for(files: int) -> None:
    """This process opens `files` sockets: raise its own soft limit within the hard one if it is lower."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < files:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (files if hard == resource.RLIM_INFINITY else min(files, hard), hard)
        )


def test_connections_over_the_cap_get_a_503_before_file_descriptors_run_out(tmp_path: Path) -> None:
    """Under a 1024-file limit the cap is lowered to fit (one warning line); 700 stalled connections then meet a
    one-line 503 past the cap instead of `accept()` failing with a traceback per attempt."""
    _room_for(OPENED + 256)
    with serve(tmp_path, "--read-timeout", "30", files=FILES) as server, httpx.Client(timeout=30) as http:
        episode = create(server, http, episode_id="capped")
        assert f"open-file limit ({FILES}) leaves room for {CAP} connections" in server.stderr(), server.stderr()
        held: list[socket.socket] = []
        refused = 0
        try:
            for _ in range(OPENED):
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
                sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode())
                held.append(sock)
            pending, deadline = set(held), time.monotonic() + 30
            while refused < OPENED - CAP and time.monotonic() < deadline:
                for sock in select.select(list(pending), [], [], 0.5)[0]:
                    pending.discard(sock)
                    with contextlib.suppress(OSError):
                        answer = sock.recv(65536)
                        if answer.startswith(b"HTTP/1.1 503"):
                            _, body = status_and_json(answer)
                            assert "too many open connections" in body["error"], body
                            refused += 1
        finally:
            for sock in held:
                sock.close()
        assert refused >= OPENED - CAP, refused  # the test's own client holds one more of the CAP
        time.sleep(1)  # the server sees the closes and drops below its cap
        still_answers(http, episode)
        assert server.peak_rss_mb() < RSS_CEILING_MB
    no_traceback(server)
    assert "Too many open files" not in server.stderr(), server.stderr()[-2000:]
    assert "could not accept" not in server.stderr(), "the cap and the accept burst fit the file limit"


FOREIGN = [
    ("Host", "127.0.0.1:{port}@evil.example", 421),
    ("Host", "127.0.0.1:{port} evil", 421),
    ("Host", "127.0.0.1:{port}:80", 421),
    ("Host", "127.0.0.1:99999", 421),
    ("Host", "localhost:{port}.evil.example", 421),
    ("Origin", "http://127.0.0.1:{port}.evil", 403),
    ("Origin", "http://127.0.0.1:{port}@evil.example", 403),
    ("Origin", "http://localhost:{port}/path", 403),
    ("Origin", "https://127.0.0.1:{port}", 403),
]
"""Values that start like an allowed Host or Origin: a prefix match (the SDK's rule) let all but the last through."""


def test_host_and_origin_are_matched_whole_on_every_route(tmp_path: Path) -> None:
    with serve(tmp_path) as server, httpx.Client(timeout=30) as http:
        episode = create(server, http, episode_id="home")
        mcp_path = episode["mcp_url"].removeprefix(server.base)
        routes = [("GET", "/"), ("GET", "/episodes"), ("POST", "/episodes"), ("GET", "/scenarios"),
                  ("GET", "/episodes/home"), ("POST", mcp_path), ("GET", mcp_path)]  # fmt: skip
        for header, value, status in FOREIGN:
            shown = value.format(port=server.port)
            for method, path in routes:
                host = shown if header == "Host" else f"127.0.0.1:{server.port}"
                origin = f"Origin: {shown}\r\n" if header == "Origin" else ""
                request = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Authorization: Bearer {TOKEN}\r\n"
                           "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")  # fmt: skip
                got, body = status_and_json(raw(server.port, request.encode()))
                assert got == status and f"Invalid {header} header" in body["error"], (shown, method, path, body)
        for good in (f"localhost:{server.port}", f"[::1]:{server.port}", f"LOCALHOST:{server.port}"):
            assert http.get(f"{server.base}/", headers={"host": good}).status_code == 200, good
        assert http.get(f"{server.base}/", headers={"origin": f"http://localhost:{server.port}"}).status_code == 200
        assert len(http.get(f"{server.base}/episodes", headers=OPERATOR).json()["episodes"]) == 1
        still_answers(http, episode)
    no_traceback(server)


@pytest.mark.anyio
async def test_session_ids_the_server_never_issued_are_never_kept(tmp_path: Path) -> None:
    """2,000 requests with made-up `Mcp-Session-Id`s each get the SDK's one-line 404 and leave nothing behind: the
    session map holds the one session a real handshake was issued; that one still cannot cross episodes."""
    registry = travel_registry(tmp_path, ttl=600.0)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    with anyio.fail_after(DEADLINE):
        async with serving(registry) as base, httpx.AsyncClient(timeout=30) as http:
            made = [(await http.post(f"{base}/episodes", json={"scenario": "travel"}, headers=INPROCESS_OPERATOR))
                    .json() for _ in range(2)]  # fmt: skip
            opened = await http.post(made[0]["mcp_url"], json=initialize, headers=MCP_HEADERS)
            session = opened.headers["mcp-session-id"]
            assert registry.sessions == {session: made[0]["episode_id"]}
            for n in range(2000):
                made_up = uuid.uuid4().hex if n % 2 else secrets.token_urlsafe(64)
                headers = {**MCP_HEADERS, "mcp-session-id": made_up, "mcp-protocol-version": "2025-11-25"}
                response = await http.post(made[n % 2]["mcp_url"], json=listing, headers=headers)
                assert response.status_code == 404, response.text
                assert "\n" not in response.text.strip(), response.text
            assert registry.sessions == {session: made[0]["episode_id"]}, "made-up session ids were kept"
            headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            crossed = await http.post(made[1]["mcp_url"], json=listing, headers=headers)
            assert crossed.status_code == 400 and made[0]["episode_id"] in crossed.json()["error"]
            own = await http.post(made[0]["mcp_url"], json=listing, headers=headers)
            assert own.status_code == 200, own.text

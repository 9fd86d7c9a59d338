"""A hostile upstream server behind the real `mcp-hazard proxy` (tests/security/hostile_upstream.py: raw JSON-RPC on
stdio, one attack per tool), driven by the official SDK client over stdio (the frame relay and, with `--sdk`, the SDK
path) and over HTTP (many episodes in one process); and the flag that a proxy file's own command needs to run.

Each attack checks: the error (or repaired result) the call gets, in one line; what the proxy's stderr says about it,
with no traceback; a bound on time (the upstream timeout is 3 s here) and on the proxy's peak memory; and that the
next good call still answers.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from conftest import REPO_ROOT, WAIT_S, run_main, start_http_server
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from mcp_hazard.proxy.stderr_log import LIMIT_BYTES, NOTE
from tests.e2e.support import console_script
from tests.proxy.support import made_once

pytestmark = pytest.mark.e2e

HOSTILE = Path(__file__).with_name("hostile_upstream.py")
UPSTREAM_TIMEOUT = 3
GUARD_S = WAIT_S
"""Every wait on a process: far above what any case takes, even on a busy machine."""
DROPPED = "upstream notifications dropped"  # what the SDK path logs for a client that does not read
RSS_GUARD_MIB = 300
"""The proxy's peak memory (about 80 MiB at rest). Before the bounds, the 50 MB line alone took over 100 MiB more and
a flood of 20,000 list_changed notifications 400-530 MiB."""
TOKEN = "proxy-security-token"


def upstream(tmp_path: Path, *flags: str) -> str:
    """The hostile server's command line; it writes the pid of the process that started it (the proxy)."""
    return shlex.join([sys.executable, str(HOSTILE), "--pid-file", str(tmp_path / "proxy.pid"), *flags])


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    peak = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(peak.split()[1]) / 1024


def proxy_pid(tmp_path: Path) -> int:
    return int((tmp_path / "proxy.pid").read_text(encoding="utf-8"))


def trace_events(tmp_path: Path) -> list[dict[str, Any]]:
    (trace,) = sorted((tmp_path / "traces").glob("*.jsonl"))
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr and "Error:" not in stderr.replace("upstream_error", ""), stderr


@dataclass
class Seen:
    """What the client saw of one attack and the good call after it."""

    result: Any
    error: MCPError | None
    after: str
    peak_mib: float
    tools: dict[str, Any]
    stderr: str


def attack(
    tmp_path: Path, tool: str, *, sdk: bool = False, flags: tuple[str, ...] = (), more: tuple[str, ...] = ()
) -> Seen:
    """`mcp-hazard proxy --upstream-cmd HOSTILE [MORE]` over stdio: list, call `tool`, then call `echo`."""
    args = ["proxy", "--upstream-cmd", upstream(tmp_path, *flags), "--upstream-timeout", str(UPSTREAM_TIMEOUT),
            "--trace-dir", str(tmp_path / "traces"), *(["--sdk"] if sdk else []), *more]  # fmt: skip
    params = StdioServerParameters(command=console_script(), args=args, cwd=str(REPO_ROOT))
    stderr_path = tmp_path / "proxy.stderr"

    async def run() -> Seen:
        with stderr_path.open("w", encoding="utf-8") as errlog, anyio.fail_after(GUARD_S):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                result, error = None, None
                try:
                    result = await client.call_tool(tool, {"text": "hi"})
                except MCPError as exc:
                    error = exc
                after = await client.call_tool("echo", {"text": "after"})
                peak = peak_rss_mib(proxy_pid(tmp_path))
        text = after.content[0].text  # type: ignore[union-attr]
        return Seen(result, error, text, peak, tools, stderr_path.read_text(encoding="utf-8"))

    return anyio.run(run)


REFUSED = [
    # (tool, what the error says, what the proxy's stderr says)
    ("wrong_id", "did not answer tools/call within 3 s", "answered a request no one waits for id=100"),
    ("not_utf8", "refused: a line that is not UTF-8 (byte 68)", "a line that is not UTF-8 (byte 68)"),
    ("huge", "refused: a line of 52,428,873 bytes, over the limit of 4,194,304", "a line of 52,428,873 bytes"),
    ("hang", "the upstream server did not answer tools/call within 3 s (--upstream-timeout)", None),
    ("truncated", "the upstream server's answer was refused: a line that is not JSON (Unterminated string",
     "a line that is not JSON"),
    ("deep", "refused: a line that is nested deeper than 64 levels", "nested deeper than 64 levels"),
    ("deep_list", "refused: a line that is nested deeper than 64 levels", "nested deeper than 64 levels"),
]  # fmt: skip
ONE_SESSION = [case[0] for case in REFUSED] + ["surrogate", "flood", "blank"]
"""The attacks one proxy process meets in turn, each followed by a good call: what it does after one attack is what
it does before the next, so one session per path proves each as well as a process per attack did, for less CPU.
The attacks whose words hold the request's id go first, while it has one digit: `wrong_id` (the id it answers, 1000
more than asked, is the one its log line names), `not_utf8` (the bad byte's offset) and `huge` (the line's length)."""


@dataclass
class Met:
    """What the client saw of one attack of a session and the good call after it, as plain data (JSON)."""

    error: str | None  # the error's message, if the call failed
    code: int | None
    text: str | None  # the result's first text, if it answered
    after: str
    peak_mib: float  # the proxy's peak memory so far: this attack and those before it
    stderr: str  # what the proxy wrote to stderr from this call to the answer of the good call after it


@dataclass
class Attacked:
    """Each attack of one session (`ONE_SESSION`), the tools listed, and that session's trace."""

    met: dict[str, Met]
    tools: dict[str, Any]  # name: input schema
    calls: dict[str, list[dict[str, Any]]]  # tool_called events: the attack's call and the good call after it
    events: list[dict[str, Any]]


def _attack_in_turn(folder: Path, sdk: bool) -> None:
    """`mcp-hazard proxy --upstream-cmd HOSTILE --empty-schema` over stdio: list, then each attack of ONE_SESSION
    followed by `echo`, and the proxy's peak memory after each; what was seen is written to FOLDER/met.json."""
    args = ["proxy", "--upstream-cmd", upstream(folder, "--empty-schema"), "--upstream-timeout",
            str(UPSTREAM_TIMEOUT), "--trace-dir", str(folder / "traces"), *(["--sdk"] if sdk else [])]  # fmt: skip
    params = StdioServerParameters(command=console_script(), args=args, cwd=str(REPO_ROOT))
    stderr_path = folder / "proxy.stderr"
    met: dict[str, dict[str, Any]] = {}
    tools: dict[str, Any] = {}

    async def run() -> None:
        with stderr_path.open("w", encoding="utf-8") as errlog, anyio.fail_after(GUARD_S):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools.update({tool.name: tool.input_schema for tool in (await client.list_tools()).tools})
                for tool in ONE_SESSION:
                    errlog.flush()
                    before = stderr_path.stat().st_size
                    seen: dict[str, Any] = {"error": None, "code": None, "text": None}
                    try:
                        result = await client.call_tool(tool, {"text": "hi"})
                        seen["text"] = result.content[0].text  # type: ignore[union-attr]
                    except MCPError as exc:
                        seen.update(error=exc.error.message, code=exc.error.code)
                    after = await client.call_tool("echo", {"text": "after"})
                    seen["peak_mib"] = peak_rss_mib(proxy_pid(folder))
                    with stderr_path.open("rb") as written:
                        written.seek(before)
                        seen["stderr"] = written.read().decode("utf-8")
                    seen["after"] = after.content[0].text  # type: ignore[union-attr]
                    met[tool] = seen

    anyio.run(run)
    (folder / "met.json").write_text(json.dumps({"met": met, "tools": tools}), encoding="utf-8")


@pytest.fixture(scope="module", params=["relay", "sdk"])
def attacked(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Attacked:
    """One session of every attack per path (the frame relay, the SDK path with `--sdk`), made once per test
    session whichever worker's tests ask first."""
    sdk = request.param == "sdk"
    folder = made_once(tmp_path_factory, f"attacked-{request.param}", lambda f: _attack_in_turn(f, sdk))
    saved = json.loads((folder / "met.json").read_text(encoding="utf-8"))
    events = trace_events(folder)
    called = [e for e in events if e["type"] == "tool_called"]
    assert len(called) == 2 * len(ONE_SESSION), [(e["tool"], e["outcome"]) for e in called]
    calls = {tool: called[2 * i : 2 * i + 2] for i, tool in enumerate(ONE_SESSION)}
    met = {tool: Met(**seen) for tool, seen in saved["met"].items()}
    return Attacked(met, saved["tools"], calls, events)


@pytest.mark.parametrize(("tool", "message", "logged"), REFUSED, ids=[case[0] for case in REFUSED])
def test_a_hostile_answer_is_an_error_for_its_call_and_the_next_call_answers(
    attacked: Attacked, tool: str, message: str, logged: str | None
) -> None:
    seen = attacked.met[tool]
    assert seen.error is not None and message in seen.error, seen.error
    assert "\n" not in seen.error
    assert seen.code == (-32001 if "did not answer" in message else -32603)
    assert seen.after == "after"
    assert seen.peak_mib < RSS_GUARD_MIB, seen.peak_mib  # the peak of the session so far: this attack and before
    assert_clean(seen.stderr)
    if logged is not None:
        lines = [line for line in seen.stderr.splitlines() if logged in line]
        assert len(lines) == 1, seen.stderr
    called = attacked.calls[tool]
    assert [(e["tool"], e["outcome"]) for e in called] == [(tool, "upstream_error"), ("echo", "ok")]
    assert message in called[0]["error"]


def test_a_lone_surrogate_in_a_result_is_replaced_and_the_call_traced(attacked: Attacked) -> None:
    seen = attacked.met["surrogate"]
    assert seen.error is None and seen.text == "half \ufffd a pair"
    assert seen.after == "after"
    assert_clean(seen.stderr)
    assert len([line for line in seen.stderr.splitlines() if "lone surrogates" in line]) == 1, seen.stderr
    called = attacked.calls["surrogate"]
    assert [(e["tool"], e["outcome"]) for e in called] == [("surrogate", "ok"), ("echo", "ok")]
    assert called[0]["result"] == "half \ufffd a pair"


def test_a_flood_of_list_changed_is_read_once_per_burst_in_flat_memory(attacked: Attacked) -> None:
    seen = attacked.met["flood"]
    assert seen.error is None and seen.text == "flooded"
    assert seen.after == "after"
    assert seen.peak_mib < RSS_GUARD_MIB, seen.peak_mib
    assert_clean(seen.stderr)
    changed = [e for e in attacked.events if e["type"] == "list_changed"]  # no other attack changes the list
    assert 1 <= len(changed) <= 20, len(changed)  # one re-reading per burst, not 20,000


def test_a_tool_whose_input_schema_is_empty_is_served_as_an_object_schema(attacked: Attacked) -> None:
    seen = attacked.met["blank"]
    assert attacked.tools["blank"] == {"type": "object"}
    assert seen.error is None and seen.text == "hi"
    assert seen.after == "after"
    assert_clean(seen.stderr)


def test_a_line_that_is_not_utf8_before_the_handshake_is_named(tmp_path: Path) -> None:
    seen = attack(tmp_path, "echo", flags=("--bad-handshake",))  # the server answers its handshake after it
    assert seen.error is None and seen.after == "after"
    named = [line for line in seen.stderr.splitlines() if "a line that is not UTF-8 (byte 0)" in line]
    assert len(named) == 2, seen.stderr  # one per server process: the short first connection, the one served
    assert_clean(seen.stderr)
    done = run_main("proxy", "--upstream-cmd", upstream(tmp_path, "--garbage-and-exit"), cwd=REPO_ROOT)
    assert done.returncode == 2
    error = done.stderr.splitlines()[-1]
    assert error.startswith("mcp-hazard: error: cannot reach the upstream server (")
    assert error.endswith("before any answer it wrote a line that is not UTF-8 (byte 0)"), error
    assert "no answer to the handshake" not in error
    assert_clean(done.stderr)


@pytest.mark.parametrize("sdk", [False, True], ids=["relay", "sdk"])
def test_a_server_writing_its_stderr_without_end_fills_its_log_only_to_the_bound(tmp_path: Path, sdk: bool) -> None:
    """80 MiB of stderr: `--upstream-log` (and a run's upstream.log) holds the first 64 MiB and one line saying the
    rest was dropped; the call answers. The file took all of it, and a server that wrote on would fill the disk."""
    log = tmp_path / "upstream.log"
    seen = attack(tmp_path, "shout", sdk=sdk, more=("--upstream-log", str(log)))
    assert seen.error is None and seen.result.content[0].text == "shouted" and seen.after == "after"
    data = log.read_bytes()
    assert len(data) == LIMIT_BYTES + len(NOTE), len(data)
    assert data.startswith(b"shouting !!!") and data.endswith(NOTE.encode())
    assert_clean(seen.stderr)


# -- over HTTP: one process, many episodes, each with its own upstream --------------------------------------------


def test_over_http_a_hostile_upstream_fails_only_its_own_calls(tmp_path: Path) -> None:
    served = ("proxy", "--upstream-cmd", upstream(tmp_path), "--upstream-timeout", str(UPSTREAM_TIMEOUT))
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", served=served, extra=("--token", TOKEN))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        urls = []
        for name in ("attacked", "bystander"):
            created = httpx.post(f"{server.base_url}/episodes", json={"episode_id": name}, headers=headers,
                                 timeout=GUARD_S)  # fmt: skip
            assert created.status_code == 201, created.text
            urls.append(created.json()["mcp_url"])
        errors, rounds = anyio.run(_attack_over_http, urls, headers)
        peak = peak_rss_mib(server.process.pid)
    finally:
        server.stop()
    assert errors == {
        "hang": "the upstream server did not answer tools/call within 3 s (--upstream-timeout)",
        "huge": "the upstream server's answer was refused: a line of 52,428,873 bytes, over the limit of 4,194,304",
        "deep": "the upstream server's answer was refused: a line that is nested deeper than 64 levels",
        "not_utf8": "the upstream server's answer was refused: a line that is not UTF-8 (byte 68)",
        "flood": "flooded",
        "surrogate": "half \ufffd a pair",
    }
    assert rounds >= 3, rounds  # the other episode kept answering all along
    assert peak < RSS_GUARD_MIB, peak
    assert_clean(server.stderr())


async def _attack_over_http(urls: list[str], headers: dict[str, str]) -> tuple[dict[str, str], int]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    seen: dict[str, str] = {}
    rounds = 0
    done = anyio.Event()
    with anyio.fail_after(GUARD_S):
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(urls[0], http_client=http)) as attacked,
            Client(streamable_http_client(urls[1], http_client=http)) as bystander,
        ):

            async def keep_calling() -> None:
                nonlocal rounds
                while not done.is_set():
                    result = await bystander.call_tool("echo", {"text": "still here"})
                    assert result.content[0].text == "still here"  # type: ignore[union-attr]
                    rounds += 1
                    await anyio.sleep(0.2)

            async with anyio.create_task_group() as group:
                group.start_soon(keep_calling)
                for tool in ("hang", "huge", "deep", "not_utf8", "flood", "surrogate"):
                    try:
                        result = await attacked.call_tool(tool, {})
                        seen[tool] = result.content[0].text  # type: ignore[union-attr]
                    except MCPError as exc:
                        seen[tool] = exc.error.message
                after = await attacked.call_tool("echo", {"text": "after"})
                assert after.content[0].text == "after"  # type: ignore[union-attr]
                done.set()
    return seen, rounds


# -- a hostile Streamable HTTP server behind the proxy --------------------------------------------------------------


def test_a_hostile_http_upstream_is_bounded_the_same_way(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    server = subprocess.Popen([sys.executable, str(HOSTILE), "--http", str(port_file), "--empty-schema"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + GUARD_S
        while not port_file.exists() or not port_file.read_text():
            assert time.monotonic() < deadline and server.poll() is None, "the HTTP server did not start"
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}/mcp"
        seen, tools, stderr = anyio.run(_through_http_upstream, tmp_path, url)
    finally:
        server.kill()
        server.wait(timeout=GUARD_S)
    refused = "the upstream server's answer was refused: "
    assert seen == {
        "hang": "the upstream server did not answer tools/call within 3 s (--upstream-timeout)",
        "huge": refused + "an answer of more than 4,194,304 bytes",
        "deep": refused + "not JSON (recursion limit exceeded at line 1 column 1063)",
        "surrogate": refused + "not JSON (unexpected end of hex escape at line 1 column 80)",
        "blank": "hi",
        "echo": "after",
    }
    assert tools["blank"] == {"type": "object"}
    assert_clean(stderr)
    assert len([line for line in stderr.splitlines() if "4,194,304 bytes" in line]) == 1, stderr


async def _through_http_upstream(tmp_path: Path, url: str) -> tuple[dict[str, str], dict[str, Any], str]:
    args = ["proxy", "--upstream-url", url, "--upstream-timeout", str(UPSTREAM_TIMEOUT), "--trace-dir",
            str(tmp_path / "traces")]  # fmt: skip
    params = StdioServerParameters(command=console_script(), args=args, cwd=str(REPO_ROOT))
    stderr_path = tmp_path / "proxy.stderr"
    seen: dict[str, str] = {}
    with stderr_path.open("w", encoding="utf-8") as errlog, anyio.fail_after(GUARD_S):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
            for tool in ("hang", "huge", "deep", "surrogate", "blank", "echo"):
                try:
                    result = await client.call_tool(tool, {"text": "after" if tool == "echo" else "hi"})
                    seen[tool] = result.content[0].text  # type: ignore[union-attr]
                except MCPError as exc:
                    seen[tool] = exc.error.message
            assert peak_rss_mib(_pid_with(url)) < RSS_GUARD_MIB
    return seen, tools, stderr_path.read_text(encoding="utf-8")


def _pid_with(word: str) -> int:
    """The process whose command line holds `word` (the proxy started with this URL)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if word.encode() in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError(f"no process with {word!r} in its command line")


# -- a cassette from someone else ------------------------------------------------------------------------------------

HEADER = json.dumps({"cassette": 1, "upstream": {"name": "hostile", "version": "1.0", "protocol_version": "2025-11-25",
                                                 "capabilities": {"tools": {}}}})  # fmt: skip
LISTING = json.dumps({"request": "tools/list {}", "result": {"tools": [
    {"name": "echo", "inputSchema": {}}, {"name": "odd", "inputSchema": {"type": "string"}}]}})  # fmt: skip
DAMAGED = [
    ("deep", b'{"request":"tools/list {}","result":' + b'{"a":' * 5_000 + b"1" + b"}" * 5_000 + b"}",
     ":2: nested deeper than 64 levels"),
    ("oversize", b'{"request":"tools/list {}","result":{"t":"' + b"x" * (9 * 1024 * 1024) + b'"}}',
     ":2: a line of 9,437,229 bytes, over the limit of 8,388,608"),
    ("error-code", b'{"request":"tools/list {}","error":{"code":"x","message":"m"}}',
     ":2: an exchange's error needs an integer 'code' and a text 'message'"),
    ("not-utf8", b'{"request":"tools/list {}","result":{"t":"\xff"}}', ":2: not UTF-8 (byte 42)"),
    ("nan", b'{"request":"tools/list {}","result":{"t":NaN}}', ":2: not JSON (NaN is not JSON)"),
    # results a live server could not have given (the SDK refuses them): served, they crashed the call
    ("call-result", b'{"request":"tools/call {}","result":{"content":[],"isError":{"x":1}}}',
     ":2: the server's answer to tools/call does not fit the protocol: isError: Input should be a valid boolean"),
    ("listing-result", b'{"request":"tools/list {}","result":{"tools":[{"name":7,"inputSchema":{}}]}}',
     ":2: the server's answer to tools/list does not fit the protocol: tools.0.name: Input should be a valid string"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "line", "said"), DAMAGED, ids=[case[0] for case in DAMAGED])
def test_a_damaged_cassette_line_is_one_line_naming_it(tmp_path: Path, name: str, line: bytes, said: str) -> None:
    cassette = tmp_path / f"{name}.jsonl"
    cassette.write_bytes(HEADER.encode() + b"\n" + line + b"\n")
    done = run_main("proxy", "--replay", str(cassette), cwd=REPO_ROOT)  # what it says, before serving anything
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"mcp-hazard: error: {cassette}{said}"], done.stderr


def test_a_replayed_lone_surrogate_and_empty_schema_are_served(tmp_path: Path) -> None:
    cassette = tmp_path / "odd.jsonl"
    call = json.dumps({"request": 'tools/call {"arguments":{"text":"hi"},"name":"echo"}',
                       "result": {"content": [{"type": "text", "text": "half \\ud800 a pair"}]}})  # fmt: skip
    cassette.write_text("\n".join([HEADER, LISTING, call.replace("\\\\ud800", "\\ud800")]) + "\n", encoding="utf-8")
    params = StdioServerParameters(command=console_script(), cwd=str(REPO_ROOT), args=[
        "proxy", "--replay", str(cassette), "--trace-dir", str(tmp_path / "traces")])  # fmt: skip
    stderr_path = tmp_path / "proxy.stderr"

    async def run() -> tuple[dict[str, Any], str]:
        with stderr_path.open("w", encoding="utf-8") as errlog, anyio.fail_after(GUARD_S):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
                result = await client.call_tool("echo", {"text": "hi"})
                return tools, result.content[0].text  # type: ignore[union-attr]

    tools, text = anyio.run(run)
    assert tools == {"echo": {"type": "object"}}  # `odd` (a string schema) left out
    assert text == "half \ufffd a pair"
    stderr = stderr_path.read_text(encoding="utf-8")
    assert_clean(stderr)
    assert "lone surrogates" in stderr and "tool=odd" in stderr, stderr
    called = [e for e in trace_events(tmp_path) if e["type"] == "tool_called"]
    assert [(e["tool"], e["outcome"], e["result"]) for e in called] == [("echo", "ok", "half \ufffd a pair")]


@pytest.mark.parametrize("path", ["relay", "sdk"])
def test_other_notifications_for_a_client_that_does_not_read_stay_bounded(tmp_path: Path, path: str) -> None:
    """20,000 `notifications/resources/list_changed` while the client reads nothing for 3 s: the relay writes them
    at the client's pace; the SDK path keeps at most 1,000 waiting and drops the rest (one log line)."""
    import queue
    import threading

    args = [console_script(), "proxy", "--upstream-cmd", upstream(tmp_path), "--trace-dir", str(tmp_path / "traces"),
            *(["--sdk"] if path == "sdk" else [])]  # fmt: skip
    stderr_path = tmp_path / "proxy.stderr"
    with stderr_path.open("wb") as stderr:
        proxy = subprocess.Popen(args, cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    assert proxy.stdin is not None and proxy.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    reading = threading.Event()
    stdout = proxy.stdout

    def read() -> None:
        while True:
            reading.wait()
            line = stdout.readline()
            if not line:
                return
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()

    def send(frame: dict[str, Any]) -> None:
        assert proxy.stdin is not None
        proxy.stdin.write(json.dumps(frame).encode() + b"\n")
        proxy.stdin.flush()

    def answer(request_id: int) -> tuple[dict[str, Any], int]:
        """The answer to `request_id`, and how many notifications came before it."""
        deadline, notes = time.monotonic() + GUARD_S, 0
        while True:
            frame = json.loads(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            if frame.get("id") == request_id:
                return frame, notes
            notes += frame.get("method") == "notifications/resources/list_changed"

    try:
        client = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "slow", "version": "1"}}
        reading.set()
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": client})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        reading.clear()
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "news_flood", "arguments": {}}})
        time.sleep(3)  # reading nothing (but the line the reader was waiting for)
        deadline = time.monotonic() + GUARD_S  # on a loaded machine the flood may take longer to reach 1,000 waiting
        while path == "sdk" and DROPPED not in stderr_path.read_text(encoding="utf-8", errors="replace"):
            if time.monotonic() > deadline or proxy.poll() is not None:
                break  # the assertions below say what went wrong
            time.sleep(0.1)
        peak = peak_rss_mib(proxy_pid(tmp_path))
        reading.set()
        told, delivered = answer(2)
        send(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
        )
        after, _ = answer(3)
    finally:
        proxy.stdin.close()
        proxy.wait(timeout=GUARD_S)
    assert told["result"]["content"][0]["text"] == "told" and after["result"]["content"][0]["text"] == "x"
    assert peak < RSS_GUARD_MIB, peak
    stderr = stderr_path.read_text(encoding="utf-8")
    assert_clean(stderr)
    dropped = [line for line in stderr.splitlines() if DROPPED in line]
    if path == "relay":
        assert delivered == 20_000 and not dropped
    else:
        assert 1_000 <= delivered < 20_000 and len(dropped) >= 1, (delivered, stderr)

"""`mcp-hazard serve` as a real subprocess over stdio, as a desktop assistant would start it."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from conftest import WAIT_S, CliRun, run_main
from mcp import Client, StdioServerParameters

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.condition import Condition
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import free_port, open_episode, serve_command
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.server.served_episode import SUBMIT_TOOL

from .support import (
    LEGACY_PROTOCOL,
    MODERN_PROTOCOL,
    REPO_ROOT,
    TRAVEL,
    calls,
    golden_calls,
    strict_events,
    wait_for_trace_end,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

DEADLINE = WAIT_S
PROTOCOL_OF_MODE = {"legacy": LEGACY_PROTOCOL, "2026-07-28": MODERN_PROTOCOL}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_golden_agent_solves_a_task_over_stdio(travel: LoadedScenario, tmp_path: Path, mode: str) -> None:
    task = travel.model.task("cheapest-trip")
    assert task is not None
    with anyio.fail_after(DEADLINE):
        async with open_episode("stdio", travel, task.id, Condition(seed=5), tmp_path, mode=mode) as connected:
            assert connected.client.protocol_version == PROTOCOL_OF_MODE[mode]
            report = await run_golden_agent(connected.client, task)
    assert report.notes == []
    assert answer_matches(task.answer, report.answer)
    events = wait_for_trace_end(connected.trace_path)
    started = events[0]
    assert started["type"] == "episode_started"
    assert started["run"] == {"episode_id": connected.episode_id, "transport": "stdio", "agent": None}
    assert started["protocol_version"] == PROTOCOL_OF_MODE[mode]
    assert started["condition"]["seed"] == 5
    assert [(c["tool"], c["arguments"]) for c in calls(events)] == golden_calls(travel, task)
    assert events[-1]["reason"] == "answered"
    assert sum(1 for e in events if e["type"] == "episode_ended") == 1


async def test_client_leaving_without_an_answer_ends_the_episode_disconnected(
    travel: LoadedScenario, tmp_path: Path
) -> None:
    command = serve_command(travel, "fare-class", Condition(seed=2), tmp_path, "stdio-leaver")
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO_ROOT))
    with anyio.fail_after(DEADLINE):
        async with Client(params, mode="legacy") as client:
            fare = await client.call_tool("get_fare", {"flight_id": "AU-426"})
            assert fare.is_error is not True
            bad = await client.call_tool("get_fare", {"flight_id": 426})
            assert bad.is_error is True
    events = wait_for_trace_end(tmp_path / "stdio-leaver.jsonl")
    assert [c["outcome"] for c in calls(events)] == ["ok", "invalid_arguments"]
    assert events[-1]["reason"] == "disconnected"
    assert not [e for e in events if e["type"] == "answer_submitted"]


# -- stdout is the protocol's alone -----------------------------------------------------------------------------------


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def test_stdout_carries_only_json_rpc_and_logs_go_to_stderr(tmp_path: Path) -> None:
    """Drive the server with raw JSON-RPC lines and debug logging on: every stdout line must be a JSON-RPC message
    answering our requests, and the logs must be on stderr."""
    stderr_path = tmp_path / "server.stderr"
    command = [
        sys.executable,
        "-m",
        "mcp_hazard",
        "--log-level",
        "debug",
        "serve",
        str(TRAVEL),
        "--task",
        "fare-in-dollars",
        "--trace-dir",
        str(tmp_path),
        "--episode-id",
        "raw",
    ]
    conversation = [
        _request(
            1,
            "initialize",
            {
                "protocolVersion": LEGACY_PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        ),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/list"),
        _request(3, "prompts/get", {"name": "task"}),
        _request(4, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "AU-412"}}),
        _request(5, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "AU-4120"}}),
        _request(6, "tools/call", {"name": "no_such_tool", "arguments": {}}),
        _request(7, "tools/call", {"name": SUBMIT_TOOL, "arguments": {"answer": "204.59"}}),
        _request(8, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "AU-412"}}),
    ]
    responses: dict[int, dict[str, Any]] = {}
    stdout_lines: list[bytes] = []
    with stderr_path.open("wb") as stderr, anyio.fail_after(DEADLINE):
        async with await anyio.open_process(command, stderr=stderr, cwd=REPO_ROOT) as process:
            assert process.stdin is not None and process.stdout is not None
            reader = BufferedByteReceiveStream(process.stdout)
            for message in conversation:
                await process.stdin.send(json.dumps(message).encode() + b"\n")
                if "id" not in message:
                    continue
                # read until the response to this request (the server may send notifications first)
                while message["id"] not in responses:
                    line = await reader.receive_until(b"\n", 16 * 1024 * 1024)
                    stdout_lines.append(line)
                    parsed = json.loads(line)
                    assert parsed.get("jsonrpc") == "2.0", line[:200]
                    if "id" in parsed:
                        responses[parsed["id"]] = parsed
            await process.stdin.aclose()
            rest = b""  # whatever the server writes after stdin closes, including bytes already buffered
            with contextlib.suppress(anyio.EndOfStream):
                while True:
                    rest += await reader.receive()
            code = await process.wait()
    for line in rest.splitlines():
        if line.strip():
            stdout_lines.append(line)
            assert json.loads(line).get("jsonrpc") == "2.0", line[:200]
    assert code == 0, stderr_path.read_text()
    assert all("error" not in responses[i] for i in range(1, 9)), responses
    assert responses[4]["result"]["structuredContent"]["price_eur"] == 189.0
    assert responses[5]["result"]["isError"] is True
    assert responses[6]["result"]["isError"] is True
    assert responses[7]["result"].get("isError") is not True
    assert responses[8]["result"]["isError"] is True
    logs = stderr_path.read_text(encoding="utf-8")
    assert "episode started" in logs
    assert "episode ended" in logs
    assert not any(b"episode started" in line for line in stdout_lines)
    events = wait_for_trace_end(tmp_path / "raw.jsonl")
    assert [(c["tool"], c["outcome"]) for c in calls(events)] == [
        ("get_fare", "ok"),
        ("get_fare", "invalid_arguments"),
        ("no_such_tool", "unknown_tool"),
    ]
    ended = next(event for event in events if event["type"] == "episode_ended")
    assert ended["reason"] == "answered"
    assert [event["type"] for event in events[events.index(ended) + 1 :]] == ["call_refused"]


@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_requests_sent_all_at_once_then_end_of_input_are_all_answered(stdin: str, tmp_path: Path) -> None:
    """`serve ... < requests.jsonl` (or a pipe written whole and closed): the input ends right after the last
    request, before its answer is made. The SDK cancels what is under way at the end of input, so the last call's
    answer was lost, though the call was made and traced; the server now waits for the answers first."""
    init = {"protocolVersion": LEGACY_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "all", "version": "0"}}
    conversation = [_request(1, "initialize", init), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    conversation += [_request(n, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "AU-412"}})
                     for n in range(2, 30)]  # fmt: skip
    conversation.append(_request(30, "tools/call", {"name": SUBMIT_TOOL, "arguments": {"answer": "USD 205.12"}}))
    sent = b"".join(json.dumps(message).encode() + b"\n" for message in conversation)
    (tmp_path / "requests.jsonl").write_bytes(sent)
    command = [sys.executable, "-m", "mcp_hazard", "serve", str(TRAVEL), "--task", "fare-in-dollars",
               "--trace-dir", str(tmp_path), "--episode-id", "all"]  # fmt: skip
    with (tmp_path / "requests.jsonl").open("rb") as requests:
        done = subprocess.run(command, input=sent if stdin == "pipe" else None, stdin=None if stdin == "pipe" else
                              requests, capture_output=True, cwd=REPO_ROOT, timeout=DEADLINE)  # fmt: skip
    assert done.returncode == 0, done.stderr
    answered = [json.loads(line)["id"] for line in done.stdout.splitlines()]
    assert sorted(answered) == list(range(1, 31)), answered
    events = wait_for_trace_end(tmp_path / "all.jsonl")
    assert len(calls(events)) == 28 and [e["type"] for e in events][-2:] == ["answer_submitted", "episode_ended"]


def test_a_call_a_latency_hazard_holds_is_cancelled_when_the_input_ends(tmp_path: Path) -> None:
    """The end of input waits for answers under way, but not for a call a latency hazard holds: the client left it,
    so the trace records it as cancelled (a wait would have let this one-second delay run out and the call
    complete, for a client that was gone)."""
    init = {"protocolVersion": LEGACY_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "left", "version": "0"}}
    conversation = [_request(1, "initialize", init), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    _request(2, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "AU-426"}})]  # fmt: skip
    command = [sys.executable, "-m", "mcp_hazard", "serve", str(TRAVEL), "--task", "fare-class", "--hazard",
               "latency:seconds=1", "--trace-dir", str(tmp_path), "--episode-id", "left"]  # fmt: skip
    sent = b"".join(json.dumps(message).encode() + b"\n" for message in conversation)
    done = subprocess.run(command, input=sent, capture_output=True, cwd=REPO_ROOT, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    events = wait_for_trace_end(tmp_path / "left.jsonl")
    assert [(e["type"], e.get("outcome") or e.get("kind") or e.get("reason")) for e in events[1:]] == [
        ("hazard_fired", "latency"),
        ("tool_called", "cancelled"),
        ("episode_ended", "disconnected"),
    ]


def test_replies_to_a_file_are_written_too(tmp_path: Path) -> None:
    """Replies to a regular file (`serve ... > replies`): the event loop cannot wait on a file, so the server writes
    it the SDK's way, and every reply is there as soon as it is sent. (A stdin that is not a pipe, the null device,
    is served the same way: tests/hazards/test_params.py.)"""
    replies = tmp_path / "replies.jsonl"
    command = [sys.executable, "-m", "mcp_hazard", "serve", str(TRAVEL), "--task", "fare-in-dollars",
               "--trace-dir", str(tmp_path), "--episode-id", "file"]  # fmt: skip
    init = {"protocolVersion": LEGACY_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "file", "version": "0"}}
    conversation = [
        _request(1, "initialize", init),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/list"),
        _request(3, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "AU-412"}}),
    ]
    answered: dict[int, dict[str, Any]] = {}
    with replies.open("wb") as stdout:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE,
                                   cwd=REPO_ROOT)  # fmt: skip
        assert process.stdin is not None
        for message in conversation:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            deadline = time.monotonic() + DEADLINE
            while "id" in message and message["id"] not in answered and time.monotonic() < deadline:
                lines = replies.read_text(encoding="utf-8").splitlines()
                answered = {reply["id"]: reply for reply in map(json.loads, lines) if "id" in reply}
                time.sleep(0.01)
        _, stderr = process.communicate(timeout=DEADLINE)
    assert process.returncode == 0, stderr
    assert sorted(answered) == [1, 2, 3]
    assert answered[3]["result"]["structuredContent"]["price_eur"] == 189.0
    assert [(c["tool"], c["outcome"]) for c in calls(wait_for_trace_end(tmp_path / "file.jsonl"))] == [
        ("get_fare", "ok")
    ]


# -- stopping a stdio server with a signal ----------------------------------------------------------------------------

STOP_DEADLINE = WAIT_S


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_signal_stops_a_stdio_server_and_ends_its_episode(tmp_path: Path, sig: signal.Signals) -> None:
    """A stdio server told to stop (Ctrl-C in a terminal, or SIGTERM from a client's process manager) while its
    stdin is still open exits promptly and its trace ends with `episode_ended` (reason server_stopped, as over HTTP).
    """
    command = serve_command(load_scenario(TRAVEL), "fare-class", Condition(seed=1), tmp_path, "signalled")
    conversation = [
        _request(
            1,
            "initialize",
            {
                "protocolVersion": LEGACY_PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        ),
        _request(2, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "AU-426"}}),
    ]
    with (tmp_path / "server.stderr").open("wb") as stderr:
        process = await anyio.open_process(command, stderr=stderr, cwd=REPO_ROOT)
    try:
        assert process.stdin is not None and process.stdout is not None
        reader = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(DEADLINE):
            for message in conversation:
                await process.stdin.send(json.dumps(message).encode() + b"\n")
                await reader.receive_until(b"\n", 16 * 1024 * 1024)
        process.send_signal(sig)
        exited = False
        with anyio.move_on_after(STOP_DEADLINE):
            await process.wait()
            exited = True
        assert exited, f"the server was still running {STOP_DEADLINE}s after {sig.name} (its stdin still open)"
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.move_on_after(STOP_DEADLINE):
                await process.wait()
        await process.aclose()
    events = strict_events(tmp_path / "signalled.jsonl")
    assert [c["outcome"] for c in calls(events)] == ["ok"]
    assert events[-1]["type"] == "episode_ended", f"trace ends with {events[-1]['type']} after {sig.name}"
    assert events[-1]["reason"] == "server_stopped"


# -- a problem in what the user gave: one line on stderr, non-zero exit, no traceback --------------------------------

BAD_FILES = {
    "unknown-key": TRAVEL.read_text(encoding="utf-8").replace("format: 1\n", "format: 1\nsurprise: 1\n", 1),
    "invalid-yaml": "id: [unclosed\n",
    "not-a-mapping": "- just\n- a list\n",
    "empty": "",
    "wrong-answer": TRAVEL.read_text(encoding="utf-8").replace(
        "answer: {value: AU-418, match: case_insensitive}", "answer: {value: AU-999, match: case_insensitive}"
    ),
}


def _serve(*args: str, cwd: Path, real: bool = False) -> subprocess.CompletedProcess[str] | CliRun:
    """`serve ARGS` refused before it serves: in this process (what it says is the subject), or as the real program
    (`real`, once per kind of refusal: nothing reaches the process's stdout, and it exits)."""
    if not real:
        return run_main("serve", *args, cwd=cwd)
    return subprocess.run(
        [sys.executable, "-m", "mcp_hazard", "serve", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )


def _assert_one_line_error(done: subprocess.CompletedProcess[str] | CliRun, *needles: str) -> None:
    assert done.returncode != 0
    assert done.stdout == "", "nothing may reach stdout (it belongs to the protocol)"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_scenario_file_with_a_problem_exits_non_zero_with_one_line(kind: str, tmp_path: Path) -> None:
    file = tmp_path / f"{kind}.yaml"
    file.write_text(BAD_FILES[kind], encoding="utf-8")
    done = _serve(str(file), "--trace-dir", str(tmp_path / "traces"), cwd=tmp_path, real=kind == "invalid-yaml")
    _assert_one_line_error(done, file.name)
    assert not (tmp_path / "traces").exists() or not list((tmp_path / "traces").glob("*.jsonl"))


def test_scenario_file_with_a_problem_stops_the_http_server_too(tmp_path: Path) -> None:
    file = tmp_path / "unknown-key.yaml"
    file.write_text(BAD_FILES["unknown-key"], encoding="utf-8")
    http = ["--http", f"127.0.0.1:{free_port()}"]
    done = _serve(str(file), *http, "--trace-dir", str(tmp_path / "t"), cwd=tmp_path, real=True)
    _assert_one_line_error(done, "unknown-key.yaml", "surprise")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(["missing.yaml"], "missing.yaml", id="missing-file"),
        pytest.param([str(TRAVEL), "--task", "no-such-task"], "no-such-task", id="unknown-task"),
        pytest.param([str(TRAVEL), "--seed", "-3"], "seed", id="negative-seed"),
        pytest.param([str(TRAVEL), "--seed", "x"], "seed", id="non-numeric-seed"),
        pytest.param([str(TRAVEL), "--episode-id", "../escape"], "episode id", id="bad-episode-id"),
    ],
)
def test_bad_serve_arguments_exit_non_zero_with_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    done = _serve(*args, "--trace-dir", str(tmp_path / "traces"), cwd=tmp_path, real=needle == "missing.yaml")
    _assert_one_line_error(done, needle)

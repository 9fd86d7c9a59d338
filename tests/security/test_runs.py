"""Runs, disks and servers that go away, through the real CLI: two runs on one folder, a killed run, a full disk, a
read-only folder, a killed stdio server. Each failure is one line (exit 2 where it can be seen at start), nothing
written is left half a line, the same command resumes, and a server keeps serving its other episodes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import REPO_ROOT, TEST_TOKEN, TRAVEL, CliRun, free_port, run_main

from .disk import Preexec, both, bound_by_modes, full_disk, read_only, read_only_works

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parent / "agents"
DEADLINE = 120.0  # a guard against a hung process, never a timing assertion
RSS_CEILING_KB = 1_000_000  # a server that holds a gigabyte here has regressed; it needs about 100 MB
SMALL = ["--task", "fare-class", "--no-progress"]


def cli(*args: str, preexec: Preexec | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mcp_hazard", *args]
    try:
        return subprocess.run(command, cwd=REPO_ROOT, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=DEADLINE)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"`mcp-hazard {' '.join(args)}` did not finish within {DEADLINE}s") from exc


def one_error(done: subprocess.CompletedProcess[str] | CliRun, *words: str) -> str:
    """The run's stderr is exactly one `mcp-hazard: error:` line, exit 2, holding `words`."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("mcp-hazard: error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def whole_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file is whole JSON and the file ends with its last newline."""
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends in half a line: {data[-120:]!r}"
    return [json.loads(line) for line in data.splitlines()]


def check_complete_folder(out: Path, cells: int) -> list[list[dict[str, Any]]]:
    """After a run finished: one trace per cell, each one episode with one `agent_ended` as its last line."""
    traces = sorted((out / "traces").glob("*.jsonl"))
    assert len(traces) == cells, [p.name for p in traces]
    every = []
    for path in traces:
        events = whole_lines(path)
        kinds = [e["type"] for e in events]
        assert kinds.count("episode_started") == 1 and kinds[0] == "episode_started", (path, kinds)
        assert kinds.count("agent_ended") == 1 and kinds[-1] == "agent_ended", (path, kinds)
        every.append(events)
    whole_lines(out / "run.jsonl")
    return every


def wait_for(condition: Any, what: str, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert process is None or process.poll() is None, f"the process ended while waiting for {what}"
        assert time.monotonic() < deadline, f"no {what} within {DEADLINE}s"
        time.sleep(0.05)


# -- one run per folder ---------------------------------------------------------------------------------------------


def _gated_run(out: Path, gate: Path, log: Path) -> subprocess.Popen[bytes]:
    """A run whose one agent waits at `gate`: it holds its folder for as long as the test keeps the gate shut."""
    command = [sys.executable, "-m", "mcp_hazard", "run", str(TRAVEL), *SMALL, "--hazard", "transient_error",
               "--agent-cmd", f"python {AGENTS / 'gate_agent.py'}", "--out", str(out)]  # fmt: skip
    env = {**os.environ, "RUNS_TEST_GATE": str(gate), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    with log.open("wb") as stderr:
        return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=stderr, start_new_session=True)  # fmt: skip


def _holds_lock(out: Path, pid: int) -> bool:
    try:
        return json.loads((out / "run.lock").read_text(encoding="utf-8")).get("pid") == pid
    except (OSError, ValueError):
        return False


def _agent_waiting(out: Path) -> bool:
    return any('"tools_listed"' in p.read_text(encoding="utf-8") for p in (out / "traces").glob("*.jsonl"))


def test_a_second_run_on_the_same_folder_exits_2_naming_the_first(tmp_path: Path) -> None:
    out, gate = tmp_path / "out", tmp_path / "gate"
    first = _gated_run(out, gate, tmp_path / "first.stderr")
    try:
        wait_for(lambda: _holds_lock(out, first.pid) and _agent_waiting(out), "first run under way", first)
        before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
        second = run_main("run", str(TRAVEL), *SMALL, "--out", str(out), cwd=REPO_ROOT)  # the first is the process
        line = one_error(second, str(out), "in use by another run", f"pid {first.pid}", "started", "mcp-hazard run")
        assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before, "the second run wrote something"
        assert "transient_error" in line  # the first run's command, as it was given
        gate.touch()
        assert first.wait(DEADLINE) == 0, (tmp_path / "first.stderr").read_text()
    finally:
        gate.touch()
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(DEADLINE)
    assert "Traceback" not in (tmp_path / "first.stderr").read_text()
    check_complete_folder(out, cells=2)
    scored = run_main("score", str(out), "--format", "json", cwd=REPO_ROOT)
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["episodes"] == 2
    assert len(whole_lines(out / "run.jsonl")) == 2


def test_a_killed_run_leaves_no_stale_lock_and_the_rerun_resumes(tmp_path: Path) -> None:
    out, gate = tmp_path / "out", tmp_path / "gate"
    first = _gated_run(out, gate, tmp_path / "first.stderr")
    try:
        wait_for(lambda: _holds_lock(out, first.pid) and _agent_waiting(out), "first run under way", first)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(DEADLINE)
    finally:
        gate.touch()  # also lets the killed run's agent (its own process group) leave
    assert json.loads((out / "run.lock").read_text())["pid"] == first.pid  # the file stays; the OS lock is gone
    env = {"RUNS_TEST_GATE": str(gate), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    again = run_main("run", str(TRAVEL), *SMALL, "--hazard", "transient_error", "--agent-cmd",
                     f"python {AGENTS / 'gate_agent.py'}", "--out", str(out), cwd=REPO_ROOT, env=env)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    check_complete_folder(out, cells=2)


# -- a full disk, a read-only folder -------------------------------------------------------------------------------


@pytest.mark.parametrize("fills", ["trace", "run-log"])
def test_run_on_a_full_disk_stops_in_one_line_and_the_same_command_resumes(tmp_path: Path, fills: str) -> None:
    """The disk fills mid-run: while a trace is written (its episode under way), or while the run log is appended
    to (a run log grown over earlier runs). The run stops at once in one line, exit 2, no line half-written; the
    same command, with room again, finishes the matrix. Only the run the disk stops is a process of its own (its file
    size limit is the process's); the runs before and after go through `main()`."""
    out = tmp_path / "out"
    if fills == "trace":  # the first run keeps the scenario; the second's traces outgrow the limit
        first = run_main(
            "run",
            str(TRAVEL),
            *SMALL,
            "--agent",
            "naive",
            "--hazard",
            "transient_error",
            "--out",
            str(out),
            cwd=REPO_ROOT,
        )
        assert first.returncode == 0, first.stderr
        args = ["run", str(TRAVEL), *SMALL, "--agent", "recovering", "--hazard", "transient_error", "--out", str(out)]
        limit = 2_000
    else:  # a run log larger than any trace: the next lines appended to it are what the disk refuses
        first = run_main(
            "run", str(TRAVEL), *SMALL, "--agent", "naive", "--seeds", "0-2", "--out", str(out), cwd=REPO_ROOT
        )
        assert first.returncode == 0, first.stderr
        args = ["run", str(TRAVEL), *SMALL, "--agent", "naive", "--seeds", "0-3", "--out", str(out)]
        limit = (out / "run.jsonl").stat().st_size + 300
    lines_before = len(whole_lines(out / "run.jsonl"))
    stopped = cli(*args, preexec=full_disk(limit))
    one_error(stopped, "cannot write", "File too large", "the run stopped", "run the same command again")
    assert "run.jsonl" in stopped.stderr if fills == "run-log" else "traces" in stopped.stderr
    assert len(whole_lines(out / "run.jsonl")) >= lines_before
    for path in (out / "traces").glob("*.jsonl"):
        whole_lines(path)
    resumed = run_main(*args, cwd=REPO_ROOT)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    cells = 2 + 2 if fills == "trace" else 4 * _conditions_of_fare_class()  # four seeds
    check_complete_folder(out, cells=cells)


def _conditions_of_fare_class() -> int:
    """Clean, and each hazard kind that fits travel/fare-class (what `run` plays without `--hazard`)."""
    from mcp_hazard.hazards.instances import all_hazards
    from mcp_hazard.load import load_scenarios

    (scenario,) = load_scenarios([str(TRAVEL)])
    (task,) = [t for t in scenario.model.tasks if t.id == "fare-class"]
    return 1 + len(all_hazards(scenario.model, task))


@pytest.mark.parametrize("cause", ["full", "read-only"])
def test_run_refuses_a_folder_it_cannot_write_before_running_anything(tmp_path: Path, cause: str) -> None:
    out = tmp_path / "out"
    if cause == "full":
        done = cli("run", str(TRAVEL), *SMALL, "--out", str(out), preexec=full_disk(0))
        one_error(done, f"cannot write the run folder {out}", "File too large")
    else:
        if read_only_works():
            pytest.skip(f"no read-only folder here: {read_only_works()}")
        with read_only(out):
            done = cli("run", str(TRAVEL), *SMALL, "--out", str(out), preexec=bound_by_modes())
        one_error(done, f"cannot write the run folder {out}", "Permission denied")
    assert not (out / "traces").exists() and not (out / "run.jsonl").exists()


def _serve_http(trace_dir: Path, stderr: Path, preexec: Preexec | None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with stderr.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_hazard", "serve", str(TRAVEL), "--http", f"127.0.0.1:{port}",
             "--trace-dir", str(trace_dir), "--token", TEST_TOKEN],
            cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=handle, preexec_fn=preexec,
        )  # fmt: skip

    def accepts() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            return False
        return True

    wait_for(accepts, "server accepting connections", process)
    return process, f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("cause", ["full", "read-only"])
def test_serve_refuses_a_trace_folder_it_cannot_write_at_start(tmp_path: Path, transport: str, cause: str) -> None:
    traces = tmp_path / "traces"
    http = ["--http", f"127.0.0.1:{free_port()}"] if transport == "http" else []
    args = ["serve", str(TRAVEL), *http, "--trace-dir", str(traces)]
    if cause == "full":
        one_error(cli(*args, preexec=full_disk(0)), f"cannot write the trace folder {traces}", "File too large")
        return
    if read_only_works():
        pytest.skip(f"no read-only folder here: {read_only_works()}")
    with read_only(traces):
        done = cli(*args, preexec=bound_by_modes())
    one_error(done, f"cannot write the trace folder {traces}", "Permission denied")


CLIENT = {"name": "raw", "version": "1"}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT}}  # fmt: skip
OPERATOR = {"authorization": f"Bearer {TEST_TOKEN}"}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _answer(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return dict(json.loads([ln[5:] for ln in response.text.splitlines() if ln.startswith("data:")][-1]))
    return dict(response.json())


class _Episode:
    """One episode of a running `serve --http`, spoken to with raw JSON-RPC."""

    def __init__(self, http: httpx.Client, base: str) -> None:
        created = http.post(f"{base}/episodes", json={"task": "fare-class"}, headers=OPERATOR)
        assert created.status_code == 201, created.text
        self.http, self.url = http, created.json()["mcp_url"]
        started = http.post(self.url, json=INIT, headers=HEADERS)
        self.headers = {**HEADERS, "mcp-session-id": started.headers.get("mcp-session-id", ""),
                        "mcp-protocol-version": "2025-11-25"}  # fmt: skip

    def ask(self, number: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        frame = {"jsonrpc": "2.0", "id": number, "method": method, **({"params": params} if params else {})}
        return _answer(self.http.post(self.url, json=frame, headers=self.headers))


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def test_serve_http_fails_only_the_episode_whose_trace_cannot_be_written(tmp_path: Path) -> None:
    """Each trace may hold 2,000 bytes: episode A's calls outgrow it mid-episode. A's next requests get one
    JSON-RPC error each (the reason, never the trace's path), the operator one log line, and B still answers."""
    traces = tmp_path / "traces"
    server, base = _serve_http(traces, tmp_path / "server.stderr", full_disk(2_000))
    try:
        with httpx.Client(timeout=60) as http:
            a = _Episode(http, base)
            answers = [a.ask(n, "tools/call", {"name": "get_fare", "arguments": {"flight_id": "XX1"}})
                       for n in range(1, 12)]  # fmt: skip
            failed = [r for r in answers if "error" in r]
            assert failed and all(r["error"]["code"] == -32603 for r in failed), answers
            assert answers.index(failed[0]) > 0 and answers[-1] in failed  # it worked, then failed for good
            message = failed[0]["error"]["message"]
            assert message == "the server cannot record this episode (File too large); it is over", message
            assert str(tmp_path) not in json.dumps(failed)
            b = _Episode(http, base)
            listed = b.ask(1, "tools/list")
            assert "get_fare" in json.dumps(listed["result"]), listed
        assert _peak_rss_kb(server.pid) < RSS_CEILING_KB
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(DEADLINE)
    stderr = (tmp_path / "server.stderr").read_text()
    assert "Traceback" not in stderr, stderr
    logged = [line for line in stderr.splitlines() if "trace cannot be written" in line]
    assert len(logged) == 1 and "File too large" in logged[0] and str(traces) in logged[0], stderr
    for path in traces.glob("*.jsonl"):
        assert whole_lines(path)[0]["type"] == "episode_started"


def test_serve_stdio_ends_the_episode_whose_trace_cannot_be_written(tmp_path: Path) -> None:
    """The same over stdio: the calls work, then each request gets the one-line -32603 error; one log line; the
    server exits 2 once its client leaves, since its trace is cut short."""
    traces = tmp_path / "traces"
    server = subprocess.Popen(
        [sys.executable, "-m", "mcp_hazard", "serve", str(TRAVEL), "--trace-dir", str(traces), "--episode-id", "e"],
        cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=full_disk(2_000),
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None

    def ask(frame: dict[str, Any]) -> dict[str, Any]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(frame).encode() + b"\n")
        server.stdin.flush()
        box: list[bytes] = []
        reader = threading.Thread(target=lambda: box.append(server.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(DEADLINE)
        assert box and box[0], f"no answer to {frame['method']} within {DEADLINE}s"
        return dict(json.loads(box[0]))

    try:
        assert ask(INIT)["result"]["protocolVersion"] == "2025-11-25"
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = {"name": "get_fare", "arguments": {"flight_id": "XX1"}}
        answers = [ask({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call}) for n in range(1, 12)]
        server.stdin.close()
        code = server.wait(DEADLINE)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(DEADLINE)
    assert "result" in answers[0] and "error" in answers[-1], answers
    failed = [a for a in answers if "error" in a]
    assert all(a["error"] == {"code": -32603, "message": "the server cannot record this episode (File too large); "
                              "it is over"} for a in failed), failed  # fmt: skip
    assert code == 2
    stderr = server.stderr.read().decode() if server.stderr else ""
    assert "Traceback" not in stderr, stderr
    assert len([line for line in stderr.splitlines() if "trace cannot be written" in line]) == 1, stderr
    assert whole_lines(traces / "e.jsonl")[0]["type"] == "episode_started"


def test_serve_http_refuses_new_episodes_while_its_folder_is_read_only(tmp_path: Path) -> None:
    """The folder turns read-only while serving: POST /episodes answers 507 in one line (never 201 and then a
    failing episode), an episode already under way keeps answering, and creating works again once it is fixed."""
    if read_only_works():
        pytest.skip(f"no read-only folder here: {read_only_works()}")
    traces = tmp_path / "traces"
    server, base = _serve_http(traces, tmp_path / "server.stderr", both(bound_by_modes()))
    try:
        with httpx.Client(timeout=60) as http:
            a = _Episode(http, base)
            assert "get_fare" in json.dumps(a.ask(1, "tools/list")["result"])
            with read_only(traces):
                refused = http.post(f"{base}/episodes", json={"task": "fare-class"}, headers=OPERATOR)
                assert refused.status_code == 507, refused.text
                assert refused.json() == {
                    "error": "the server cannot store traces (Permission denied); no episode was created"
                }
                assert "get_fare" in json.dumps(a.ask(2, "tools/list")["result"])  # its file is open already
                assert http.get(f"{base}/").status_code == 200
            _Episode(http, base)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(DEADLINE)
    stderr = (tmp_path / "server.stderr").read_text()
    assert "Traceback" not in stderr, stderr
    assert len([line for line in stderr.splitlines() if "episode refused" in line]) == 1, stderr


# -- a stdio server that dies under its agent ----------------------------------------------------------------------


def _server_pid(marker: str) -> int | None:
    """The `mcp-hazard serve` process whose command line holds `marker` (the test's own folder and hazard)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if "serve" in words and any(marker in word for word in words) and "latency" in " ".join(words):
            return int(entry.name)
    return None


def test_a_killed_stdio_server_is_a_server_side_outcome_and_rerun(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", str(TRAVEL), *SMALL, "--agent", "recovering", "--hazard", "latency:seconds=3", "--transport",
            "stdio", "--out", str(out)]  # fmt: skip
    victim = "recovering.travel.fare-class.latency-seconds-3.strict.s0"
    trace = out / "traces" / f"{victim}.jsonl"
    with (tmp_path / "run.stderr").open("wb") as stderr:
        run = subprocess.Popen([sys.executable, "-m", "mcp_hazard", *args], cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=stderr)  # fmt: skip
    try:
        wait_for(lambda: trace.exists() and '"hazard_fired"' in trace.read_text(), "the agent mid-call", run)
        pid = _server_pid(str(out))
        assert pid is not None, "no stdio server found for the episode"
        os.kill(pid, signal.SIGKILL)
        stdout, _ = run.communicate(timeout=DEADLINE)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(DEADLINE)
    stderr = (tmp_path / "run.stderr").read_text()
    assert run.returncode == 1, stderr  # a finding: the scorecard lacks an episode, a rerun retries it
    assert "Traceback" not in stderr, stderr
    assert f"mcp-hazard: server_crashed: {victim}: the stdio server exited mid-episode" in stderr, stderr
    assert "1 episode(s) ended when their server crashed" in stderr
    assert "1 server crashes" in stdout.decode()
    log = {r["episode_id"]: r for r in whole_lines(out / "run.jsonl")}
    assert log[victim]["status"] == "server_crashed"
    ended = whole_lines(trace)[-1]
    assert ended["type"] == "agent_ended" and ended["outcome"] == "server_crashed", ended
    report = json.loads((out / "report.json").read_text())
    assert report["infrastructure"] == {"server_crashed": 1, "interrupted": 0} and report["episodes"] == 2
    assert report["overall"]["n"] == 1  # in no rate: neither a pass nor the agent's failure
    assert report["agent_outcomes"]["recovering"]["server_crashed"] == 1
    assert "agent_crashed" not in report["failures"]["episodes"]
    again = run_main(*args, cwd=REPO_ROOT)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert "2 episodes: 1 run, 1 already done" in again.stdout
    assert whole_lines(trace)[-1]["outcome"] == "finished"

"""`run --port N`: the run's HTTP server listens on 127.0.0.1:N, the port a firewalled or shared machine allows, and
every agent is handed a URL on it. A busy port is one line and exit 2 before anything runs (no run folder is made);
`--port` with a transport that has no HTTP server is refused in one line. Every run here goes through main() in this
process: the agents are real processes, and what the run binds and says is the subject, not its own process."""

from __future__ import annotations

import shlex
import socket
from pathlib import Path

import pytest

from .support import AGENTS_DIR, TRAVEL, assert_trace_ended, main_cli, no_traceback, run_log

pytestmark = pytest.mark.e2e

ATTEMPTS = 3  # a port found free can be taken by another program before the run binds it: try another


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_run_serves_its_episodes_on_the_port_given(tmp_path: Path) -> None:
    # The real external agent connects to MCP_HAZARD_URL; it prints the URL first, so its log shows what it got.
    script = AGENTS_DIR / "real_agent.py"
    agent = f"sh -c {shlex.quote(f'echo url=$MCP_HAZARD_URL; exec python {script}')}"
    for attempt in range(ATTEMPTS):
        port = _free_port()
        out = tmp_path / f"out-{attempt}"
        ran = main_cli("run", str(TRAVEL), "--task", "fare-class", "--agent-cmd", agent, "--hazard", "declared",
                       "--port", str(port), "--out", str(out), "--no-progress")  # fmt: skip
        if "the port is already in use" not in ran.stderr:
            break
    assert ran.code == 0, ran.explain()
    assert no_traceback(ran.stderr), ran.explain()
    records = run_log(out)
    assert len(records) == 1 and {r["status"] for r in records} == {"done"}, records  # one episode: one condition
    for record in records:
        assert_trace_ended(out / "traces" / f"{record['episode_id']}.jsonl", outcome="finished")
        said = (out / "agent-logs" / f"{record['episode_id']}.log").read_text(encoding="utf-8")
        url = next(line for line in said.splitlines() if line.startswith("url="))
        assert url.startswith(f"url=http://127.0.0.1:{port}/episodes/{record['episode_id']}/mcp?key="), said


def test_a_busy_port_stops_the_run_in_one_line_before_it_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        ran = main_cli("run", str(TRAVEL), "--agent", "naive", "--port", str(port), "--out", str(out), "--no-progress")
    assert ran.code == 2, ran.explain()
    assert ran.stdout == "", ran.explain()
    assert ran.stderr.splitlines() == [
        f"mcp-hazard: error: --port {port}: the port is already in use (another server is listening there); pick "
        "another port, or leave --port out for any free one"
    ], ran.explain()
    assert not out.exists(), "the run touched its folder before it could listen"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--port", "8765", "--transport", "stdio"], "--port is the port of the run's HTTP server, and --transport "
                                                     "stdio has none"),
        (["--port", "8765", "--transport", "memory"], "--transport memory has none"),
        (["--port", "70000"], "argument --port: port must be 0-65535, got 70000"),
        (["--port", "http"], "argument --port: expected a port number such as 8765, got 'http'"),
    ],
    ids=["stdio", "memory", "too-big", "not-a-number"],
)  # fmt: skip
def test_a_port_that_cannot_be_used_is_one_line(tmp_path: Path, args: list[str], said: str) -> None:
    ran = main_cli("run", str(TRAVEL), "--agent", "naive", *args, "--out", str(tmp_path / "out"), "--no-progress")
    assert ran.code == 2, ran.explain()
    [line] = ran.stderr.splitlines()
    assert line.startswith("mcp-hazard: error: ") and said in line, line
    assert not (tmp_path / "out").exists()

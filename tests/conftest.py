"""Shared fixtures: where the repository is, free ports, a real `mcp-hazard serve --http` subprocess, and the MCP
Inspector CLI (a third-party MCP client from npm).

Everything that touches the network stays on 127.0.0.1, and every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from mcp_hazard.scenario.files import LoadedScenario

REPO_ROOT = Path(__file__).resolve().parents[1]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TRAVEL = SCENARIOS_DIR / "travel.yaml"

INSPECTOR_VERSION = "2.12.0"
INSPECTOR_PACKAGE = f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"
INSPECTOR_PREFIX = REPO_ROOT / ".cache" / "inspector"
INSPECTOR_BIN = INSPECTOR_PREFIX / "node_modules" / ".bin" / "mcp-inspector"
INSPECTOR_PACKAGE_JSON = INSPECTOR_PREFIX / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"

WAIT_S = 120.0
"""The bound on every wait for another process in the tests: a command to finish, a server to start, stop or answer,
a client to connect (the MCP Inspector's `--connect-timeout` too), a trace to be written. It guards against a hang
and is never a speed check: no test asserts on elapsed wall time. 120 s holds on a busy 2-core machine
shared with other test runs, where a proxy in front of a Python server took over 15 s to connect
(docs/decisions.md, "Tests and docs")."""
SERVER_START_TIMEOUT = WAIT_S
SERVER_STOP_TIMEOUT = WAIT_S
TEST_TOKEN = "control-token-for-tests"
"""The control token the test servers are started with (`--token`): tests send it as the operator would."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: three workers for every two cores. The end-to-end tests wait on processes and sockets, so one worker
    per core leaves a quarter of the CPU idle; more than 3:2 only adds contention (docs/decisions.md, "The test suite
    on a loaded machine"). PYTEST_XDIST_AUTO_NUM_WORKERS still decides when it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(2, cores * 3 // 2)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """End-to-end tests first (a stable sort, the same on every xdist worker): they are the long ones, and started
    first they overlap with the many short tests instead of one of them finishing alone at the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Async tests run on asyncio only (the SDK and uvicorn are exercised on asyncio in production)."""
    return "asyncio"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def scenarios_dir() -> Path:
    return SCENARIOS_DIR


@pytest.fixture(scope="session")
def travel_path() -> Path:
    return TRAVEL


@pytest.fixture(scope="module")
def travel() -> LoadedScenario:
    """The shipped travel scenario, loaded once per test module (each module gets its own copy)."""
    from mcp_hazard.load import load_scenario

    return load_scenario(TRAVEL)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the caller must cope with losing a race for it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def port() -> int:
    return free_port()


@dataclass(frozen=True)
class CliRun:
    """What `mcp-hazard ARGS...` did when run in this process by `run_main`: its exit code and its two streams."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run_main(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, together: bool = False) -> CliRun:
    """`mcp-hazard ARGS...` in this process, through `main()`, with its output captured: what a subprocess would
    show, without a Python start-up and the command's imports (0.4-0.8 s of CPU) for each command. For tests of what a
    command says and does; a test of the process boundary itself (signals, stdin, exit on a crash) starts the real
    program. stdin is the null device (fd 0 too: `serve` reads the pipe directly), so a command that should have
    refused and serves instead ends at once rather than waiting for a client. An argparse exit is returned as its
    code, as the program would exit with it. `env` is set for the command's duration (`COLUMNS`, `NO_COLOR`...).
    `together`: stderr goes to stdout, in the order written, as a terminal shows both (`stderr` is then empty)."""
    import io
    import logging
    from contextlib import chdir, redirect_stderr, redirect_stdout

    from mcp_hazard.cli import main

    out = io.StringIO()
    err = out if together else io.StringIO()
    saved_env = {key: os.environ.get(key) for key in env or {}}
    os.environ.update(env or {})
    saved_logging = logging.root.handlers[:], logging.root.level  # main() points logging at its captured stderr
    saved_stdin, saved_fd0 = sys.stdin, os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        sys.stdin = io.StringIO("")
        with chdir(cwd or os.getcwd()), redirect_stdout(out), redirect_stderr(err):
            try:
                code: int | str | None = main(list(args))
            except SystemExit as exit_:
                code = exit_.code
    finally:
        sys.stdin = saved_stdin
        os.dup2(saved_fd0, 0)
        os.close(saved_fd0)
        os.close(null)
        handlers, level = saved_logging
        logging.root.handlers[:] = handlers
        logging.root.setLevel(level)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if isinstance(code, str):  # SystemExit("message"): the interpreter prints it and exits 1
        err.write(code + "\n")
        code = 1
    return CliRun(tuple(args), int(code or 0), out.getvalue(), "" if together else err.getvalue())


def hazard_command(*args: str) -> list[str]:
    """`mcp-hazard ARGS...` run with this interpreter, so the test uses the code under test."""
    return [sys.executable, "-m", "mcp_hazard", *args]


# -- a real HTTP server subprocess ----------------------------------------------------------------------------------


@dataclass
class HttpServer:
    """`mcp-hazard serve DIR --http 127.0.0.1:PORT` running as a subprocess."""

    process: subprocess.Popen[bytes]
    port: int
    trace_dir: Path
    stderr_path: Path
    token: str | None = TEST_TOKEN

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth(self) -> dict[str, str]:
        """The header that gives the operator's rights on the control routes (none for a --no-token server)."""
        return {} if self.token is None else {"authorization": f"Bearer {self.token}"}

    def lazy_url(self, episode_id: str, query: str) -> str:
        """An MCP URL that creates its episode on first use: the condition and the control token in the query."""
        token = "" if self.token is None else f"&token={self.token}"
        return f"{self.base_url}/episodes/{episode_id}/mcp?{query}{token}"

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = SERVER_STOP_TIMEOUT) -> int:
        """Send `sig` and wait for the process to exit; kill it if it does not. Returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)
                raise AssertionError(f"server did not exit within {timeout}s of signal {sig}; killed it") from None
        return int(self.process.returncode)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def start_http_server(
    trace_dir: Path,
    log_dir: Path,
    scenario_path: Path = SCENARIOS_DIR,
    *,
    attempts: int = 3,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    served: tuple[str, ...] | None = None,
    token: str | None = TEST_TOKEN,
) -> HttpServer:
    """Start the server on a free port and wait (bounded) until it accepts connections. `served` replaces
    `serve SCENARIO_PATH` (e.g. `proxy FILE --upstream-cmd ...`); `token` is passed as `--token` (None: none is
    passed, so the environment's or a generated one applies, or `--no-token` in `extra` opens the control plane).

    A free port can be taken by someone else between choosing and binding it, so a server that exits early is
    retried on another port a few times.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    last_error = ""
    for attempt in range(attempts):
        port = free_port()
        stderr_path = log_dir / f"server-{port}-{attempt}.stderr"
        with stderr_path.open("wb") as stderr:
            given = ("--token", token) if token is not None else ()
            command = hazard_command(*(served or ("serve", str(scenario_path))), "--http", f"127.0.0.1:{port}",
                                     "--trace-dir", str(trace_dir), *given, *extra)  # fmt: skip
            process = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        server = HttpServer(process, port, trace_dir, stderr_path, token if "--no-token" not in extra else None)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if _accepts(port):
                return server
            time.sleep(0.05)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=SERVER_STOP_TIMEOUT)
            raise AssertionError(
                f"server did not accept connections within {SERVER_START_TIMEOUT}s:\n{server.stderr()}"
            )
        last_error = server.stderr()
    raise AssertionError(f"server exited before accepting connections ({attempts} attempts):\n{last_error}")


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One HTTP server for the session, serving every scenario in scenarios/; stopped (SIGTERM) at the end."""
    root = tmp_path_factory.mktemp("http-server")
    server = start_http_server(root / "traces", root)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            with contextlib.suppress(AssertionError):
                server.stop(signal.SIGTERM)


@pytest.fixture
def own_http_server(tmp_path: Path) -> Iterator[HttpServer]:
    """A server of the test's own, for tests that stop it; always gone after the test."""
    server = start_http_server(tmp_path / "traces", tmp_path / "logs")
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(timeout=SERVER_STOP_TIMEOUT)


# -- the MCP Inspector CLI ------------------------------------------------------------------------------------------


def _installed_inspector_version() -> str | None:
    try:
        return str(json.loads(INSPECTOR_PACKAGE_JSON.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def _unavailable(reason: str) -> NoReturn:
    """In CI a missing inspector is a failure (the suite must not silently shrink); locally, a clear skip."""
    if in_ci():
        pytest.fail(f"MCP Inspector CLI unavailable in CI: {reason}", pytrace=False)
    pytest.skip(f"MCP Inspector CLI unavailable: {reason} (set CI=true to make this a failure)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def inspector_bin() -> Path:
    """The `mcp-inspector` binary of @modelcontextprotocol/inspector 2.12.0, installed into .cache/inspector."""
    if not (INSPECTOR_BIN.exists() and _installed_inspector_version() == INSPECTOR_VERSION):
        npm = shutil.which("npm")
        if npm is None:
            _unavailable("npm is not installed")
        INSPECTOR_PREFIX.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--prefix", str(INSPECTOR_PREFIX), "--no-audit", "--no-fund", INSPECTOR_PACKAGE]
        try:
            done = subprocess.run(
                command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600
            )
        except subprocess.TimeoutExpired:
            _unavailable(f"`{' '.join(command)}` took longer than 600s")
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            gist = [line for line in lines if line.startswith("npm error")][:3] or lines[-3:]
            _unavailable(f"`{' '.join(command)}` failed (exit {done.returncode}): {' | '.join(gist)}")
    if not INSPECTOR_BIN.exists():
        _unavailable(f"{INSPECTOR_BIN} is missing after npm install")
    if shutil.which("node") is None:
        _unavailable("node is not installed")
    return INSPECTOR_BIN


@pytest.fixture
def inspector_env(tmp_path: Path) -> dict[str, str]:
    """Environment for one inspector run: catalog, client config and home under tmp_path, nothing in ~."""
    home = tmp_path / "inspector-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(
        MCP_CATALOG_PATH=str(tmp_path / "inspector-catalog.json"),
        MCP_CLIENT_CONFIG_PATH=str(tmp_path / "inspector-client.json"),
        HOME=str(home),
        NO_COLOR="1",
    )
    return env

"""Helpers for proxy tests: the proxy as a stdio server, trace reading, and a costly run made once per session."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO_ROOT, WAIT_S, hazard_command
from mcp import StdioServerParameters

PROXIES = REPO_ROOT / "proxies"
LOCK_WAIT_S = 3 * WAIT_S
"""How long a worker waits for another to make a shared folder: a run of several episodes, each bounded by WAIT_S."""


def proxy_params(*args: str) -> StdioServerParameters:
    """`mcp-hazard proxy ARGS...` as a stdio server for the SDK client."""
    command = hazard_command("proxy", *args)
    return StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO_ROOT))


def events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def of_type(path: Path, kind: str) -> list[dict[str, object]]:
    return [e for e in events(path) if e["type"] == kind]


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder that `make` fills once per test session, whichever xdist worker asks first; the others wait for it.
    A module fixture alone runs once per worker whose share of the module uses it, which would repeat a costly run.
    Waiting for the lock is bounded by `make`'s own bounded waits (each under WAIT_S) and, here, by LOCK_WAIT_S."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker else root  # the session's folder, shared by its workers (pytest-N)
    folder = root / f"shared-{name}"
    with (root / f"shared-{name}.lock").open("w") as lock:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, f"another worker held {lock.name} for {LOCK_WAIT_S:.0f} s"
                time.sleep(0.2)
        try:
            if not (folder / ".made").exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                make(folder)
                (folder / ".made").touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder

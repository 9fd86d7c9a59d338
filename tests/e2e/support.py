"""Helpers shared by the end-to-end tests (no fixtures here; those live in tests/conftest.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from conftest import WAIT_S

from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.golden_check import run_golden_path
from mcp_hazard.scenario.models import Task

REPO_ROOT = ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TRAVEL = SCENARIOS_DIR / "travel.yaml"

LEGACY_PROTOCOL = "2025-11-25"
MODERN_PROTOCOL = "2026-07-28"


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def strict_events(path: Path) -> list[dict[str, Any]]:
    """Every line of a trace parsed as JSON; any line that is not JSON fails the test (no tolerance here)."""
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise AssertionError(f"{path}:{number} is not JSON ({exc.msg}): {line[:200]!r}") from None
    return events


def wait_for_trace_end(path: Path, timeout: float = WAIT_S) -> list[dict[str, Any]]:
    """The trace's events once it holds `episode_ended` and only refusals follow it (a subprocess may still flush)."""
    deadline = time.monotonic() + timeout
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        if path.exists():
            events = strict_events(path)
            kinds = [event["type"] for event in events]
            if "episode_ended" in kinds and set(kinds[kinds.index("episode_ended") + 1 :]) <= {"call_refused"}:
                return events
        time.sleep(0.05)
    last = events[-1]["type"] if events else "nothing"
    raise AssertionError(f"{path}: no episode_ended within {timeout}s (last event: {last})")


def calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool_called"]


def golden_calls(scenario: LoadedScenario, task: Task) -> list[tuple[str, dict[str, Any]]]:
    """The (tool, arguments) of the task's golden path, computed from the behaviours (no server involved)."""
    run = run_golden_path(scenario.model, task)
    return [(step.tool, arguments) for step, (_, arguments, _) in zip(task.golden_path.steps, run.steps, strict=True)]


# -- the installed console script -------------------------------------------------------------------------------------


def console_script() -> str:
    """The `mcp-hazard` console script installed next to this interpreter (`pip install -e .` puts it there): tests
    that check what a user sees run the very command a user types."""
    path = Path(sys.executable).with_name("mcp-hazard")
    assert path.is_file(), f"no console script at {path}: install the package (pip install -e '.[test]')"
    return str(path)


SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)")


@contextmanager
def free_port_server(command: list[str], cwd: Path, timeout: float = WAIT_S) -> Iterator[int]:
    """`command --http 127.0.0.1:0` as a subprocess; yields the port it printed (binding port 0 cannot lose a race for
    a port); stopped with SIGTERM at the end."""
    process = subprocess.Popen([*command, "--http", "127.0.0.1:0"], cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
            seen.append(line)
            found = SERVING.search(line)
            if found:
                yield int(found.group(1))
                return
        raise AssertionError(f"server did not say where it listens: {''.join(seen)}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=WAIT_S)

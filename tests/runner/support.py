"""Helpers for the runner tests: run the CLI in this process or as the real program (bounded), read run folders,
check processes."""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from conftest import WAIT_S, run_main

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TRAVEL = SCENARIOS_DIR / "travel.yaml"
AGENTS_DIR = Path(__file__).resolve().parent / "agents"
VENV_BIN = Path(sys.executable).parent

CLI_TIMEOUT = 150.0
T = TypeVar("T")


@dataclass
class Ran:
    args: list[str]
    code: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        command = f"$ mcp-hazard {' '.join(self.args)}"
        return f"{command}\nexit {self.code}\n--stdout--\n{self.stdout}\n--stderr--\n{self.stderr}"


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI run: `python` on PATH is this interpreter (so `--agent-cmd 'python x.py'` uses the
    project's virtualenv), no colour, and whatever the test adds."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = CLI_TIMEOUT, env: dict[str, str] | None = None, cwd: Path = REPO_ROOT) -> Ran:
    """`python -m mcp_hazard ARGS` to the end (bounded); a run that overstays is killed and fails the test."""
    command = [sys.executable, "-m", "mcp_hazard", *args]
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env or cli_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"`mcp-hazard {' '.join(args)}` did not finish within {timeout}s") from exc
    return Ran(list(args), done.returncode, done.stdout, done.stderr)


def main_cli(*args: str, cwd: Path = REPO_ROOT, **env: str) -> Ran:
    """`mcp-hazard ARGS` through `main()` in this process, in the environment `run_cli` gives the program (`python` on
    PATH is this interpreter, no colour, 200 columns, plus `env`): for tests of what a command does and says, where the
    process boundary is not the subject (signals, a killed run, stdin) and a Python start-up per command is waste."""
    wanted = {key: value for key, value in cli_env(**env).items() if os.environ.get(key) != value}
    done = run_main(*args, cwd=cwd, env=wanted)
    return Ran(list(args), done.returncode, done.stdout, done.stderr)


def agent_cmd(script: str) -> str:
    """An `--agent-cmd` for one of the helper agents (`python` resolves to this interpreter through cli_env)."""
    return f"python {AGENTS_DIR / script}"


def jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file as JSON; a line that is not JSON fails the test with file and line."""
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise AssertionError(f"{path}:{number} is not JSON ({exc.msg}): {line[:200]!r}") from None
    return events


def run_log(out: Path) -> list[dict[str, Any]]:
    return jsonl(out / "run.jsonl")


def assert_trace_ended(path: Path, outcome: str | None = None) -> list[dict[str, Any]]:
    """A complete trace: valid JSONL, episode_started first, episode_ended last of the server's events; a trace the
    runner finished also has `agent_ended` as its very last line (with `outcome`, when given)."""
    events = jsonl(path)
    assert events, f"{path} is empty"
    assert events[0]["type"] == "episode_started", f"{path}: first event is {events[0]['type']}"
    served = [e for e in events if e["type"] != "agent_ended"]
    assert served[-1]["type"] == "episode_ended", f"{path}: last server event is {served[-1]['type']}"
    agent_ended = [i for i, e in enumerate(events) if e["type"] == "agent_ended"]
    if outcome is not None or agent_ended:
        assert agent_ended == [len(events) - 1], f"{path}: agent_ended is not the one last line: {agent_ended}"
        assert outcome is None or events[-1]["outcome"] == outcome, f"{path}: outcome {events[-1]['outcome']}"
        assert events[-1]["seq"] == events[-2]["seq"] + 1, f"{path}: agent_ended is not numbered after the rest"
    return events


def subset_scenario(tmp: Path, tasks: list[str], source: Path = TRAVEL, name: str = "travel-subset.yaml") -> Path:
    """A copy of a shipped scenario with only some of its tasks (same id), to keep a matrix small."""
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    data["tasks"] = [task for task in data["tasks"] if task["id"] in tasks]
    assert [t["id"] for t in data["tasks"]] == tasks, "unknown task in subset_scenario"
    target = tmp / name
    target.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return target


def process_alive(pid: int) -> bool:
    """True while `pid` runs. A zombie (exited, not yet reaped by an init that never reaps) counts as gone: it holds
    no resources and runs no code."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def wait_gone(pids: list[int], timeout: float = WAIT_S) -> list[int]:
    """The pids still alive after waiting up to `timeout` seconds for all of them to go."""
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if process_alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if process_alive(pid)]
    return alive


def pct(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def ci(bounds: list[float]) -> str:
    return f"[{bounds[0] * 100:.1f}–{bounds[1] * 100:.1f}]"


def no_traceback(text: str) -> bool:
    return "Traceback" not in text and "Exception Group" not in text


def once_per_session(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], T]) -> T:
    """`build(folder)` once for the whole test session, its result shared by every xdist worker. A module-scoped
    fixture runs once per worker that gets one of its tests, and pytest-xdist spreads a module's tests over both
    workers: an expensive run (a matrix, a run killed on purpose) would run twice, for the same assertions. The first
    worker to ask builds under a lock in the session's shared temporary folder; the others wait for the lock and
    read the pickled result (so `build` returns plain data: paths, strings, numbers). A build that raised leaves
    nothing behind, and the next worker builds again, to fail with its own error."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = factory.getbasetemp().parent if worker else factory.getbasetemp()  # the parent: one per xdist session
    folder = root / f"once-{name}"
    folder.mkdir(exist_ok=True)
    result = folder / "result.pickle"
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # no deadline needed: the holder's own waits are bounded
        try:
            if result.exists():
                return pickle.loads(result.read_bytes())  # type: ignore[no-any-return]
            work = folder / "work"
            if work.exists():  # a build that failed on another worker: start clean
                shutil.rmtree(work)
            work.mkdir()
            value = build(work)
            result.write_bytes(pickle.dumps(value))
            return value
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

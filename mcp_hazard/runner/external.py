"""Run an external agent program against one episode (`mcp-hazard run --agent-cmd 'CMD ...'`).

The program gets the episode through environment variables (docs/agents.md), connects as an MCP client, solves the
task and calls `submit_answer`. What it leaves in its process group ends with it (given a moment when the program
ended by itself; killed at once when the episode's time is up), and its output is kept in a log of bounded size.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import signal
import subprocess
import tempfile
from pathlib import Path

import anyio
from anyio.abc import Process

from mcp_hazard.errors import UserError
from mcp_hazard.runner.agent_output import CappedLog
from mcp_hazard.trace.storage import storage_error

LINGER_S = 1.0  # how long output is read after the program's group is cleared
GRACE_S = 1.0  # how long what a program left running gets to end by itself, then after SIGTERM


def agent_name(command: str) -> str:
    """A trace-safe name for an external agent: its program's file name (the first word that looks like a script,
    else the first word) plus a short stable hash of the whole command, so two commands never share a name."""
    words = shlex.split(command)
    if not words:
        raise UserError("--agent-cmd is empty")
    script = next((w for w in words[1:] if Path(w).suffix in (".py", ".js", ".mjs", ".ts", ".sh", ".rb")), words[0])
    base = "".join(c if c.isalnum() or c in "._-" else "-" for c in Path(script).name)[:40].strip("-.") or "external"
    digest = hashlib.blake2b(command.encode(), digest_size=3).hexdigest()
    return f"cmd-{base}-{digest}"


async def run_external(
    command: str, env_extra: dict[str, str], prompt: str, timeout_s: float, log_path: Path
) -> tuple[int | None, bool]:
    """Run the agent; returns (exit code or None when killed, whether it timed out). Its output goes to `log_path`,
    bounded (agent_output.py)."""
    try:  # the agent's log is in the run folder: a full disk there stops the run (runner/run.py)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = log_path.open("wb")
    except OSError as exc:
        raise storage_error(log_path, exc) from None
    with log:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as handle:
            handle.write(prompt)
            prompt_file = handle.name
        env = {**os.environ, **env_extra, "MCP_HAZARD_PROMPT": prompt, "MCP_HAZARD_PROMPT_FILE": prompt_file}
        try:
            process = await anyio.open_process(
                shlex.split(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
            )  # fmt: skip
            output = CappedLog(log)
            try:
                timed_out = await _supervise(process, timeout_s, output)
            finally:
                output.close()
        finally:
            Path(prompt_file).unlink(missing_ok=True)
    return (None if timed_out else process.returncode), timed_out


async def _supervise(process: Process, timeout_s: float, output: CappedLog) -> bool:
    """Wait for the program for at most `timeout_s` (True: it did not end in time), reading its output all along.
    Then its process group is cleared, whether it timed out or ended: the episode is over, and what it started and
    left running (a helper, a browser, a server of its own) must not outlive it, use the machine and hold the
    output's pipe. A process that left the group (`setsid`) is out of reach; its output is read for at most
    LINGER_S more."""
    assert process.stdout is not None
    stdout = process.stdout
    drained = anyio.Event()

    async def drain() -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in stdout:
                output.write(chunk)
        drained.set()

    timed_out, ended = False, False
    async with anyio.create_task_group() as group:
        group.start_soon(drain)
        try:
            with anyio.move_on_after(timeout_s) as waited:
                await process.wait()
            timed_out, ended = waited.cancelled_caught, not waited.cancelled_caught
        finally:
            with anyio.CancelScope(shield=True):
                await _clear_group(process.pid, gently=ended)
                await process.wait()
                with anyio.move_on_after(LINGER_S):
                    await drained.wait()
                group.cancel_scope.cancel()
                await stdout.aclose()
    return timed_out


async def _clear_group(group: int, *, gently: bool) -> None:
    """End what is left in the program's process group. After a program that ended by itself (`gently`), what it
    left gets GRACE_S to end too (a stdio server it started ends when its stdin closes, and writes the episode's
    end to the trace), then SIGTERM and GRACE_S more; then, and at once for a program stopped or out of time,
    SIGKILL."""
    for sent in (None, signal.SIGTERM) if gently else ():
        if sent is not None:
            _signal_group(group, sent)
        with anyio.move_on_after(GRACE_S):
            while _signal_group(group, 0) and _runs_in(group):
                await anyio.sleep(0.05)
            return
    _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, sent: int) -> bool:
    """Send `sent` to the group (0: none, to ask whether any of it is left); False once none of it is."""
    try:
        os.killpg(group, sent)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member that changed its user: still there, out of reach
    return True


def _runs_in(group: int) -> bool:
    """Whether a process of the group is still running, zombies aside: an exited process whose parent had gone
    stays a zombie in its group where the machine's init never reaps (a container's), and waiting for it to go
    would wait out the whole grace. Without /proc, as the group's existence says."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()  # the name before ")" may hold any character
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False


def stdio_env(command: list[str]) -> dict[str, str]:
    return {"MCP_HAZARD_TRANSPORT": "stdio", "MCP_HAZARD_SERVER_COMMAND": json.dumps(command)}


def http_env(url: str) -> dict[str, str]:
    return {"MCP_HAZARD_TRANSPORT": "http", "MCP_HAZARD_URL": url}

"""Run an external agent program against one episode (`mcp-hazard run --agent-cmd 'CMD ...'`).

The program gets the episode through environment variables (docs/agents.md), connects as an MCP client, solves the
task and calls `submit_answer`. It is killed (its whole process group) when the episode's time is up.
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

from mcp_hazard.errors import UserError
from mcp_hazard.trace.storage import storage_error


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
    """Run the agent; returns (exit code or None when killed, whether it timed out). Its output goes to `log_path`."""
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
        process = subprocess.Popen(
            shlex.split(command), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
        timed_out = False
        try:
            with anyio.fail_after(timeout_s):
                while process.poll() is None:
                    await anyio.sleep(0.05)
        except TimeoutError:
            timed_out = True
        finally:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            Path(prompt_file).unlink(missing_ok=True)
    return (None if timed_out else process.returncode), timed_out


def stdio_env(command: list[str]) -> dict[str, str]:
    return {"MCP_HAZARD_TRANSPORT": "stdio", "MCP_HAZARD_SERVER_COMMAND": json.dumps(command)}


def http_env(url: str) -> dict[str, str]:
    return {"MCP_HAZARD_TRANSPORT": "http", "MCP_HAZARD_URL": url}

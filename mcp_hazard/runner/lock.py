"""One run at a time per run folder: `run.lock`, held with an OS lock for as long as the run lasts.

Two runs writing one folder would both run the same episodes and append to the same traces (two `agent_ended` in
one trace, more traces than cells, a report that counts them all). So `run` takes an exclusive `fcntl.flock` on
`OUT/run.lock` before it writes anything there, and a second run on the same folder stops with one line naming the
first: its pid, host, start time and command, which the holder writes into the file once it holds the lock.

The lock is the kernel's, not the file's existence: it goes when the process ends, however it ends (kill -9
included), so a killed run never leaves a stale lock, and the file itself stays (removing it would let a third run
lock a new file while a second still holds the old one). On a platform without `fcntl` (Windows, which the runner's
process-group handling does not support either) the folder is not locked, and `run` says so in one warning line.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from mcp_hazard.errors import UserError
from mcp_hazard.json_parse import loads
from mcp_hazard.trace.storage import storage_error, write_whole
from mcp_hazard.trace.writer import utc_now

LOCK_NAME = "run.lock"
MAX_SHOWN_COMMAND = 200

try:
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms the suite runs on
    fcntl = None  # type: ignore[assignment]


class FolderBusy(UserError):
    """Another run holds the folder's lock."""


def _holder(text: str) -> str:
    """The lock file's record of its holder, in words."""
    try:
        record: Any = loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return "another run (it has not said which yet)"
    command = str(record.get("command", ""))
    if len(command) > MAX_SHOWN_COMMAND:
        command = command[: MAX_SHOWN_COMMAND - 1] + "…"
    return (f"another run: pid {record.get('pid')} on {record.get('host')}, started {record.get('started')}"
            + (f" ({command})" if command else ""))  # fmt: skip


def _command() -> str:
    words = ["mcp-hazard", *sys.argv[1:]]
    return " ".join(shlex.quote(word) for word in words)


@contextmanager
def run_folder_lock(out: Path) -> Iterator[None]:
    """Hold `out`'s lock for the block, or stop with one line (`FolderBusy`) when another run holds it. The folder
    must exist and be writable (trace/storage.check_writable)."""
    path = out / LOCK_NAME
    if fcntl is None:  # pragma: no cover
        print(f"mcp-hazard: warning: this platform has no fcntl, so {out} is not locked against a second run",
              file=sys.stderr)  # fmt: skip
        yield
        return
    try:
        handle: IO[bytes] = path.open("a+b", buffering=0)
    except OSError as exc:
        raise storage_error(path, exc) from None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read(4096).decode("utf-8", "replace")
            raise FolderBusy(f"{out} is in use by {_holder(text)}; wait for it to end, or give another --out") from None
        except OSError as exc:  # a filesystem without locks
            raise UserError(f"cannot lock {path}: {exc.strerror}") from None
        record = {"pid": os.getpid(), "host": socket.gethostname(), "started": utc_now(), "command": _command()}
        try:
            os.ftruncate(handle.fileno(), 0)
        except OSError as exc:
            raise storage_error(path, exc) from None
        write_whole(handle, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

"""Disk failures a test can cause in a child process, without a mount and as root or not: a full disk and a
read-only folder (docs/decisions.md, "Disk failures in tests", says why these and not others)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

Preexec = Callable[[], None]

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1
_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded before any fork: the child only calls it


def full_disk(limit: int) -> Preexec:
    """Files the child (and its children) write may grow to `limit` bytes and no further: a write past it stores
    what fits and the next one fails with EFBIG, as a filling disk stores what fits and then fails with ENOSPC.
    SIGXFSZ, which would kill the process instead, is ignored (and stays ignored across exec)."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _drop_override() -> None:
    """Root bypasses a folder's mode (CAP_DAC_OVERRIDE); without that capability in its bounding set, the program
    it execs is held to the mode bits like anyone else."""
    if _LIBC.prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def bound_by_modes() -> Preexec | None:
    """What makes a child obey `chmod 0o555`: nothing for a user, dropping CAP_DAC_OVERRIDE for root."""
    return _drop_override if os.geteuid() == 0 else None


def both(*steps: Preexec | None) -> Preexec | None:
    kept = [step for step in steps if step is not None]
    if not kept:
        return None

    def apply() -> None:
        for step in kept:
            step()

    return apply


@cache
def read_only_works() -> str | None:
    """None when a child started with `bound_by_modes()` cannot create a file in a 0o555 folder; else why not (a
    root without CAP_SETPCAP cannot drop the capability)."""
    folder = Path(f"/tmp/mcp-hazard-ro-probe-{os.getpid()}")
    folder.mkdir(exist_ok=True)
    try:
        with read_only(folder):
            done = subprocess.run(
                [sys.executable, "-c", f"open({str(folder / 'x')!r}, 'w')"],
                preexec_fn=bound_by_modes(), capture_output=True, timeout=60,
            )  # fmt: skip
    except subprocess.SubprocessError as exc:
        return f"cannot start a child held to folder modes: {exc}"
    finally:
        (folder / "x").unlink(missing_ok=True)
        folder.rmdir()
    return None if done.returncode != 0 else "a child wrote into a 0o555 folder"


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """`folder` with mode 0o555 for the block (and writable again after, so the test's tmp_path can be removed)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    try:
        yield folder
    finally:
        folder.chmod(0o755)

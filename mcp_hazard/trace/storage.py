"""Writing to disk when the disk may refuse: a full disk, a read-only folder, a file-size limit.

Traces and the run log are JSONL, and a reader trusts every complete line. So a line is written whole or not at all:
a write that stops part-way (the disk filled up mid-line) is taken back by truncating the file to where the line
began, and the failure is one `StorageError` naming the file and the system's reason, never a traceback. A folder is
checked at start (`check_writable`) by creating, writing and removing a probe file, so a command that could not
record anything says so in one line before it does any work.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import IO

from mcp_hazard.errors import UserError
from mcp_hazard.regular_file import what_is

PROBE_PREFIX = ".mcp-hazard-probe-"


class StorageError(UserError):
    """A file could not be written (no space left, a read-only folder, a file-size limit); one line, exit 2. What
    was written before stays whole. `reason` is the system's words alone ("No space left on device")."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


def reason(exc: OSError) -> str:
    """The system's words for a failed write, without the errno number and the path Python adds."""
    return exc.strerror or type(exc).__name__


def storage_error(path: Path | str, exc: OSError, what: str = "") -> StorageError:
    """`cannot write [WHAT ]PATH: REASON`."""
    return StorageError(f"cannot write {what + ' ' if what else ''}{path}: {reason(exc)}", reason(exc))


def write_whole(handle: IO[bytes], line: bytes) -> None:
    """Write `line` to an unbuffered file, whole or not at all. The common case is one `write` that takes it all;
    a short write (a regular file gives one only when the disk fills up or a size limit is reached) is finished,
    and if that fails the part written is cut off again, so the file ends where it ended before. The error names
    the file by the path it was opened with."""
    try:
        written = handle.write(line)
    except OSError as exc:
        raise storage_error(handle.name, exc) from None
    if written == len(line):
        return
    done = written or 0
    try:
        while done < len(line):
            more = handle.write(memoryview(line)[done:])
            if not more:
                raise OSError(0, "the disk took no more bytes")
            done += more
    except OSError as exc:
        _take_back(handle, done)
        raise storage_error(handle.name, exc) from None


def _take_back(handle: IO[bytes], written: int) -> None:
    """Cut the last `written` bytes off the file (truncating needs no free space)."""
    if not written:
        return
    with contextlib.suppress(OSError):
        size = os.fstat(handle.fileno()).st_size
        os.ftruncate(handle.fileno(), max(0, size - written))


def append_whole(path: Path, line: bytes) -> None:
    """Append one line to `path` (created when missing), whole or not at all."""
    try:
        handle = path.open("ab", buffering=0)
    except OSError as exc:
        raise storage_error(path, exc) from None
    with handle:
        write_whole(handle, line)


def write_file(path: Path, data: bytes) -> None:
    """Replace `path` with `data` whole: written beside it first and renamed over it, so a full disk leaves the
    old file (or none), never half a file."""
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    try:
        with partial.open("xb", buffering=0) as handle:
            try:
                write_whole(handle, data)
            except StorageError as exc:
                raise StorageError(f"cannot write {path}: {exc.reason}", exc.reason) from None
        os.replace(partial, path)
    except OSError as exc:
        raise storage_error(path, exc) from None
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def check_writable(folder: Path, what: str) -> None:
    """Make `folder` if needed, then create, write and remove a probe file in it: a read-only folder or a full disk
    is one line (`what` says what the folder is for, e.g. "the trace folder") before any work starts."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # something that is not a folder has the name
        raise StorageError(f"cannot write {what} {folder}: {what_is(folder)}, not a folder", "not a folder") from None
    except OSError as exc:
        raise storage_error(folder, exc, what) from None
    probe = folder / f"{PROBE_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with probe.open("xb", buffering=0) as handle:
            write_whole(handle, b"probe\n")
    except StorageError as exc:
        raise StorageError(f"cannot write {what} {folder}: {exc.reason}", exc.reason) from None
    except OSError as exc:
        raise storage_error(folder, exc, what) from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)

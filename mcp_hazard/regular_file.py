"""Open a file only when it is a regular file: scenario files, traces and run logs may come from strangers.

A FIFO blocks `open()` until a writer comes, so a command would wait for ever; a device such as `/dev/zero` reads
without end until memory runs out. The file is opened without blocking and the open file is asked what it is (no gap
between a check and the open); anything but a regular file is a `NotRegularFile`, an OSError, which callers already
report as "cannot read".
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, Literal, overload

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))  # fmt: skip


def kind_of(mode: int) -> str | None:
    """What a file of this `st_mode` is, in words ("a FIFO"), when it is not a regular file; None when it is."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def what_is(path: str | Path) -> str:
    """What is at `path`, in words ("a file", "a FIFO", "a directory"), for a message saying why it cannot be used;
    the system's words when nothing is there ("no such file or directory")."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return (exc.strerror or "cannot be read").lower()
    return kind_of(mode) or "a file"


class NotRegularFile(OSError):
    """The path names a folder, FIFO, socket or device; `kind` says which."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(errno.EINVAL, "not a regular file", str(path))
        self.kind = kind


@overload
def open_regular(path: str | Path, binary: Literal[False] = False) -> IO[str]: ...
@overload
def open_regular(path: str | Path, binary: Literal[True]) -> IO[bytes]: ...
def open_regular(path: str | Path, binary: bool = False) -> IO[str] | IO[bytes]:
    """`path` opened for reading (UTF-8 text, or bytes with `binary`); NotRegularFile for anything but a regular
    file, other OSErrors as `open` raises them."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:  # a socket cannot be opened at all (ENXIO): say what it is
        try:
            kind = kind_of(os.stat(path).st_mode)
        except OSError:
            kind = None
        if kind is not None:
            raise NotRegularFile(path, kind) from None
        raise
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        return open(fd, "rb") if binary else open(fd, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


MAX_READ_BYTES = 1 << 30
"""The largest file read whole (a trace, a run log, a report.json): a report.json holds about 1.2 KB per episode,
so 120 MB for 100,000. A sparse file of 100 GB costs a stranger no disk, and reading it would take all memory."""


class TooLarge(OSError):
    """A regular file larger than MAX_READ_BYTES; an OSError, which callers report as "cannot read"."""

    def __init__(self, path: str | Path, size: int) -> None:
        super().__init__(errno.EFBIG, f"{size:,} bytes, larger than the {MAX_READ_BYTES >> 30} GiB limit on a file "
                         "read whole", str(path))  # fmt: skip


def read_regular(path: str | Path) -> str:
    """The whole text of `path` (UTF-8, newlines as text mode reads them), under `open_regular`'s refusal and
    MAX_READ_BYTES, without a leading byte order mark (an editor on Windows adds one; JSON readers may pass over
    it, RFC 8259 section 8.1).

    Read as bytes, as many as `fstat` says are there, then decoded once: a text-mode read bounded by a count
    decodes chunk by chunk, which made reading 20,000 traces four times slower. A file that grows meanwhile is
    read as it was; one that says it is empty (`/proc`) is read up to the limit."""
    with open_regular(path, binary=True) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_READ_BYTES:
            raise TooLarge(path, size)
        raw = handle.read(size + 1 if size else MAX_READ_BYTES + 1)
    if len(raw) > MAX_READ_BYTES:
        raise TooLarge(path, len(raw))
    text = raw.decode("utf-8")
    if "\r" in text:  # as text mode reads it: \r\n and a lone \r are each a newline
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text[1:] if text.startswith("\ufeff") else text

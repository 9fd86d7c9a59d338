"""An upstream server's stderr, appended to a log file of bounded size (`RUN/upstream.log`, `proxy --upstream-log`).

The server is someone else's program: one that writes its stderr without end (a debug flag left on, an error in a
loop) must not fill the disk under a run. Every server a run starts appends to the same file, so the bound is on the
file, not on one server: past LIMIT_BYTES the servers' stderr is read and dropped, and the file says so once.
"""

from __future__ import annotations

import os
import threading
from typing import IO

from mcp_hazard.errors import UserError
from mcp_hazard.log_tail import last_line

LIMIT_BYTES = 64 * 1024 * 1024
NOTE = f"\n[mcp-hazard: this log reached {LIMIT_BYTES // 1024 // 1024} MiB; the servers' stderr after it is dropped]\n"


def open_stderr_log(path: str | None) -> IO[bytes] | None:
    """What a server's stderr is written to for one server start (a pipe into `path`, copied by a thread of its
    own); None: ours. Closed by the caller once the server is started (the server holds its own descriptor)."""
    if path is None:
        return None
    try:
        log = open(path, "ab")  # noqa: SIM115 (the copying thread owns it and closes it)
    except OSError as exc:
        raise UserError(f"cannot write the upstream server's log {path}: {exc.strerror or exc}") from None
    reader, writer = os.pipe()
    threading.Thread(target=_append, args=(reader, log), name="upstream-stderr", daemon=True).start()
    return os.fdopen(writer, "wb")


def _append(reader: int, log: IO[bytes]) -> None:
    """Copy the pipe into the log until the server and what it started close it, within LIMIT_BYTES of file. The
    pipe is read to its end whatever happens to the file, so the server never blocks on its stderr."""
    noted = False
    with log, open(reader, "rb", buffering=0) as pipe:
        while chunk := pipe.read(1 << 16):
            try:
                room = LIMIT_BYTES - os.fstat(log.fileno()).st_size
                if room > 0:
                    log.write(chunk[:room])
                elif not noted:
                    noted = True
                    if not _ends_with_note(log):  # another server of the run may have said it already
                        log.write(NOTE.encode())
                log.flush()
            except OSError:
                continue  # a full disk: the run says so where it writes its own files


def _ends_with_note(log: IO[bytes]) -> bool:
    with open(log.name, "rb") as again:  # the log itself is open for appending only
        again.seek(max(0, os.fstat(again.fileno()).st_size - len(NOTE)))
        return again.read() == NOTE.encode()


def stderr_tail(path: str | None) -> str:
    """What a failure says about a server's stderr kept in a log: where it is, and its last line; "" when there is
    no log."""
    if path is None:
        return ""
    last = last_line(path)
    return f"; its stderr is in {path}" + (f", last line: {last}" if last else " (empty)")

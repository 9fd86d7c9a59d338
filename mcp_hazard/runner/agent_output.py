"""An agent program's output, kept in its log with a bound (`OUT/agent-logs/EPISODE_ID.log`).

The program is under test and may print without end (a loop that logs every step, a stack trace in a retry loop):
written straight to the file, a minute of that is tens of gigabytes and a full disk, which stops the whole run. The
log keeps the output's beginning and its end, where a failure says what it was, and one line saying how much of the
middle was left out.
"""

from __future__ import annotations

from typing import IO

HEAD_BYTES = 8 * 1024 * 1024  # the first 8 MiB of output, as written
TAIL_BYTES = 64 * 1024  # and the last 64 KiB of what came after them


class CappedLog:
    """Writes the first HEAD_BYTES of a program's output to `file`, keeps the last TAIL_BYTES of the rest in memory,
    and writes them after a line naming what was left out when the output ends (`close`)."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.written = 0
        self.tail = bytearray()
        self.past_head = 0  # bytes after the head, kept in `tail` or left out

    def write(self, chunk: bytes) -> None:
        room = HEAD_BYTES - self.written
        if room > 0:
            head = chunk[:room]
            self.file.write(head)
            self.written += len(head)
            chunk = chunk[room:]
        if chunk:
            self.past_head += len(chunk)
            self.tail += chunk
            if len(self.tail) > TAIL_BYTES:
                del self.tail[:-TAIL_BYTES]

    def close(self) -> None:
        """Write what the tail holds, after the line on what was left out (when anything was)."""
        left_out = self.past_head - len(self.tail)
        if left_out:
            self.file.write(
                f"\n[mcp-hazard: {left_out:,} bytes of the program's output left out here; its log keeps the first "
                f"{HEAD_BYTES // 1024 // 1024} MiB and the last {TAIL_BYTES // 1024} KiB]\n".encode()
            )
        self.file.write(self.tail)
        self.tail.clear()
        self.file.flush()

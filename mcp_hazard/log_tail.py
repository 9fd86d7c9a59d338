"""The last line a program wrote to its log, quoted in a one-line failure ("..., last line: ...").

Only the file's end is read: a program's log is as large as the program made it (an agent's output, an upstream
server's stderr), and the line that says why it failed is at the end.
"""

from __future__ import annotations

import os

READ_BYTES = 4096
SHOWN = 200  # characters of the line quoted


def last_line(path: str | os.PathLike[str]) -> str:
    """The log's last line that is not blank, cut to SHOWN characters; "" when it has none or cannot be read."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - READ_BYTES))
            text = log.read(READ_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    return last if len(last) <= SHOWN else last[: SHOWN - 1] + "…"

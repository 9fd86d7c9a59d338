"""Open a file the scorer was pointed at only when it is a regular file: trace folders may come from strangers.

A FIFO named `x.jsonl` blocks `open()` until a writer comes, so `score` would wait for ever; a link to `/dev/zero`
reads without end until memory runs out. Opening without blocking and asking the open file what it is (no gap
between a check and the open) turns both into an `OSError` that callers already report as "cannot read".
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TextIO

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_regular(path: str | Path) -> TextIO:
    """`path` opened as UTF-8 text; OSError("not a regular file") for a folder, FIFO, socket or device."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return open(fd, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path) -> str:
    """The whole text of `path`, under `open_regular`'s refusal."""
    with open_regular(path) as handle:
        return handle.read()

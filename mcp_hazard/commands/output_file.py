"""Writing what a command made (a report, a table, a diff, a listing) to the file its user named: a folder that does
not exist or a disk that is full is one error line, never a traceback, and a report written before stays whole."""

from __future__ import annotations

import stat
from pathlib import Path

from mcp_hazard.errors import UserError
from mcp_hazard.trace.storage import StorageError, write_file


def write_output(path: str, text: str, what: str, *, append: bool = False) -> None:
    """`text` into `path` (after what is there, with `append`); UserError `PATH: cannot write WHAT: REASON`.

    A regular file (or none yet) is replaced whole, written beside it and renamed over it: a full disk leaves the
    report of the last run, not half of this one. Anything else (`/dev/stdout`, a FIFO, a link) is written in place."""
    # A file name that is not UTF-8 is text with surrogates (os.fsdecode): written as `\udcff`, as stderr does.
    data = text.encode("utf-8", "backslashreplace")
    target = Path(path)
    try:
        if append or not _replaceable(target):
            with target.open("ab" if append else "wb") as file:
                file.write(data)
        else:
            write_file(target, data)
    except StorageError as exc:
        raise UserError(f"{path}: cannot write {what}: {exc.reason}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None


def _replaceable(target: Path) -> bool:
    """Whether `target` is a regular file that is not a link, or nothing yet."""
    try:
        return stat.S_ISREG(target.lstat().st_mode)
    except FileNotFoundError:
        return True
    except OSError:  # a name too long, a folder not searchable: the open says which
        return False

"""Writing what a command made (a report, a table, a diff, a listing) to the file its user named: a folder that does
not exist or a disk that is full is one error line, never a traceback."""

from __future__ import annotations

from pathlib import Path

from mcp_hazard.errors import UserError


def write_output(path: str, text: str, what: str, *, append: bool = False) -> None:
    """`text` into `path` (after what is there, with `append`); UserError `PATH: cannot write WHAT: REASON`."""
    try:
        # A file name that is not UTF-8 is text with surrogates (os.fsdecode): written as `\udcff`, as stderr does.
        with Path(path).open("a" if append else "w", encoding="utf-8", errors="backslashreplace") as file:
            file.write(text)
    except OSError as exc:
        raise UserError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None

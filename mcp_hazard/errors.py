"""Errors a user can cause. The CLI prints them as one line each and exits non-zero, never with a traceback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a user's file, with where it is, so an editor can jump to it."""

    file: str
    line: int | None
    column: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = f" {self.path}:" if self.path else ""
        return f"{where}:{field} {self.message}"


class UserError(Exception):
    """An error the user caused (bad file, bad flag, bad argument); its text is the whole message."""


class Interrupted(Exception):
    """A command stopped by a signal once it had tidied up (`run`: runner/stopping.py): its text is the one line to
    print, and the command exits `code` (128 + the signal's number)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class ScenarioError(UserError):
    """A scenario file has one or more problems; all of them are reported at once."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def first_leaf(exc: BaseException) -> BaseException:
    """The first exception that is not a group: what a task raised from inside a task group (the SDK client's, or
    the runner's), for a one-line account of it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def first_error(exc: Any) -> tuple[str, str]:
    """The first problem of a pydantic ValidationError: its field path (`params.arguments`, `tools.0.name`) and its
    message, for a one-line account of what a stranger's input got wrong."""
    error = exc.errors()[0]
    return ".".join(str(part) for part in error["loc"]), str(error["msg"])


def path_error_line(exc: OSError) -> str | None:
    """`PATH: REASON` for a file-system error about a path the user named (a name longer than the system takes, a
    folder it may not read), or None when the error names no path. Paths are checked where they are used, but the
    system can refuse a path at any `stat`; a path of thousands of characters is shown by its ends and its length."""
    name = exc.filename
    if name is None:
        return None
    shown = name if isinstance(name, str) else repr(name)
    if len(shown) > 120:
        shown = f"{shown[:60]}...{shown[-40:]} ({len(shown)} characters)"
    return f"{shown}: {exc.strerror or type(exc).__name__}"

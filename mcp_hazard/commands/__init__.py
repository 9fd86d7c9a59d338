"""One module per `mcp-hazard` command, holding all of it: its parser (`add_parser`, which also names the function
that runs it), its behaviour and its examples (`EXAMPLES`, shown at the end of its --help). What several commands
share (flag groups, the making of a command's parser) is in options.py, the text-to-value of single flags in
flag_values.py; cli.py only lists the commands.

Each command returns an exit code; a user error is raised as `UserError` (or `ScenarioError`) and `cli.main` turns it
into one line on stderr. The exit codes are the same for every command (README, "Exit codes"):
0 success, 1 a finding (a replay difference, an unsolvable or non-biting instance, a run with failed model
endpoints), 2 a usage or input error (a flag, a file, a name that matches nothing); 130 when interrupted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_hazard.commands.options import hazard_options
from mcp_hazard.errors import Interrupted, UserError

__all__ = ["ERROR_PREFIX", "EXIT_FINDING", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "hazard_options", "run_async"]

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
ERROR_PREFIX = "mcp-hazard: error: "


def run_async(function: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """`anyio.run`, with a user error (or a run stopped by a signal) raised inside a task group surfacing as itself
    (one line), not as a group."""
    import anyio

    try:
        return anyio.run(function, *args)
    except BaseExceptionGroup as group:
        found = _user_error(group)
        if found is not None:
            raise found from None
        raise


def _user_error(group: BaseExceptionGroup[Any]) -> UserError | Interrupted | None:
    for exc in group.exceptions:
        if isinstance(exc, UserError | Interrupted):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _user_error(exc)
            if found is not None:
                return found
    return None

"""One module per `mcp-hazard` command: what it does once its arguments are parsed (the parser is in cli.py).

Each command returns an exit code; a user error is raised as `UserError` (or `ScenarioError`) and `cli.main` turns it
into one line on stderr.
"""

from __future__ import annotations

from typing import Any

EXIT_INVALID = 1


def hazard_options(values: list[str]) -> list[Any]:
    from mcp_hazard.hazards import parse_hazard_option

    options: list[Any] = []
    for value in values:
        parsed = parse_hazard_option(value)
        options.extend(parsed if isinstance(parsed, list) else [parsed])
    return options

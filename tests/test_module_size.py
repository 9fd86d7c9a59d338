"""No module of the package is over 400 lines (docs/architecture.md: a module does one thing and is named for it):
a longer one is split along a seam a reader would name, not trimmed to fit. No function of the command line (cli.py,
commands/) is over 60 lines: a command's parser is split into its flag groups."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_hazard"
LIMIT = 400  # lines, counted as `wc -l` counts them
FUNCTION_LIMIT = 60  # lines of a function of the command line, decorators left out


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def test_no_module_is_over_the_limit() -> None:
    sizes = {path.relative_to(PACKAGE).as_posix(): _lines(path) for path in sorted(PACKAGE.rglob("*.py"))}
    over = [f"mcp_hazard/{name} ({lines} lines)" for name, lines in sizes.items() if lines > LIMIT]
    assert not over, f"over {LIMIT} lines, split along a seam a reader would name: {', '.join(over)}"


def test_no_function_of_the_command_line_is_over_the_limit() -> None:
    paths = [PACKAGE / "cli.py", *sorted((PACKAGE / "commands").glob("*.py"))]
    over = [
        f"mcp_hazard/{path.relative_to(PACKAGE).as_posix()}:{node.lineno} {node.name} ({length} lines)"
        for path in paths
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > FUNCTION_LIMIT
    ]
    assert len(paths) > 10 and not over, f"over {FUNCTION_LIMIT} lines: {', '.join(over)}"

"""No module of the package is over 400 lines (docs/architecture.md: a module does one thing and is named for it):
a longer one is split along a seam a reader would name, not trimmed to fit."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_hazard"
LIMIT = 400  # lines, counted as `wc -l` counts them


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def test_no_module_is_over_the_limit() -> None:
    sizes = {path.relative_to(PACKAGE).as_posix(): _lines(path) for path in sorted(PACKAGE.rglob("*.py"))}
    over = [f"mcp_hazard/{name} ({lines} lines)" for name, lines in sizes.items() if lines > LIMIT]
    assert not over, f"over {LIMIT} lines, split along a seam a reader would name: {', '.join(over)}"

"""No function in mcp_hazard is longer than a reader takes in at once: 60 lines, from its `def` (decorators not
counted) to its last line. A longer one is split along the concepts it walks through, not cut at line 60."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_hazard"
LIMIT = 60


def too_long(root: Path = PACKAGE, limit: int = LIMIT) -> list[str]:
    """`file:line: name is N lines` for every function (nested ones too) over `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    where = path.relative_to(root.parent)
                    found.append(f"{where}:{node.lineno}: {node.name} is {length} lines (limit {limit})")
    return found


def test_no_function_is_over_60_lines() -> None:
    found = too_long()
    assert not found, "functions over 60 lines:\n" + "\n".join(found)


def test_the_check_names_file_line_and_length(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (package / "long.py").write_text(f"import os\n\n\ndef long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert too_long(package) == ["pkg/long.py:4: long is 61 lines (limit 60)"]

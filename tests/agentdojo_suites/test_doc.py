"""The commands of docs/agentdojo.md that run in a reader's shell as written (validate, a mistyped suite), each
checked against the output the doc prints; the golden run and its export are registered to test_golden.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.coverage import to_run
from tests.docs.session import play, session

pytestmark = pytest.mark.e2e


def test_agentdojo_doc(tmp_path: Path) -> None:
    commands = to_run("docs/agentdojo.md", "test_agentdojo_doc")
    assert [c.command for c in commands] == [
        "mcp-hazard validate agentdojo:bank",
        "mcp-hazard validate agentdojo:banking",
        "mcp-hazard run agentdojo:banking --hazard injection --agent obedient --agent recovering --seeds 0 "
        "--transport memory --out runs/injection",
    ]
    with session(tmp_path) as shell:
        play(shell, commands)

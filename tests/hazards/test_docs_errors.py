"""The one-line errors docs/hazards.md shows for bad `--hazard` declarations are what the CLI prints, as written:
each `$ mcp-hazard ...` line of that block is run from the repository root and must exit 2 with exactly the next
line on stderr, and nothing on stdout."""

from __future__ import annotations

import shlex

import pytest
from conftest import REPO_ROOT, run_main

DOC = REPO_ROOT / "docs" / "hazards.md"
INTRO = "Every bad declaration is a one-line error"


def _examples() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(INTRO) :].split("```")[1].strip().splitlines()
    pairs = [(block[i][2:], block[i + 1]) for i in range(0, len(block), 2)]
    assert pairs and all(command.startswith("mcp-hazard ") for command, _ in pairs), block
    return pairs


@pytest.mark.parametrize(("command", "said"), _examples(), ids=[command for command, _ in _examples()])
def test_each_documented_error_is_what_the_command_prints(command: str, said: str) -> None:
    done = run_main(*shlex.split(command)[1:], cwd=REPO_ROOT)
    assert (done.returncode, done.stderr.strip(), done.stdout) == (2, said, "")

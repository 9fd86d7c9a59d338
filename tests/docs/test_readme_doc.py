"""README's commands, run as written in a fresh folder in the order a reader meets them (its install commands and
its HTTP section are covered elsewhere: tests/docs/coverage.py says where)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import WAIT_S

from .coverage import to_run
from .session import play, session

pytestmark = pytest.mark.e2e


def test_readme_commands_work_as_written(tmp_path: Path) -> None:
    with session(tmp_path) as shell:
        play(shell, to_run("README.md", "test_readme_commands_work_as_written"))
        completion = tmp_path / ".home" / ".local" / "share" / "bash-completion" / "completions" / "mcp-hazard"
        loaded = subprocess.run(["bash", "-c", f"source {completion} && complete -p mcp-hazard"], env=shell.env,
                                capture_output=True, text=True, timeout=WAIT_S)  # fmt: skip
    assert loaded.returncode == 0 and "-F _mcp_hazard mcp-hazard" in loaded.stdout, loaded.stderr
    assert json.loads((tmp_path / "scenario.schema.json").read_text(encoding="utf-8"))["title"] == "mcp-hazard scenario"
    assert list((tmp_path / "runs").glob("travel.cheapest-trip.seed7.*.jsonl")), "the stdio episode left its trace"

"""The commands of docs/agentdojo.md that run in a reader's shell as written (validate, a mistyped suite), each
checked against the output the doc prints; the golden run and its export are registered to test_golden.py; and the
reference agents' table, whose rows for one suite are printed here and found in the doc."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_hazard.cli import main
from mcp_hazard.scoring.agentdojo_table import main as table_main
from tests.docs.coverage import to_run
from tests.docs.session import play, session
from tests.docs.shown import ROOT

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


def test_the_reference_agents_table_is_what_the_code_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The doc's table comes from `python -m mcp_hazard.scoring.agentdojo_table` on the full run; a row is a suite
    and a condition, so the rows of one suite under a few kinds, run here, must be in the doc exactly as printed."""
    out = tmp_path / "run"
    kinds = ["--hazard", "transient_error", "--hazard", "injection", "--hazard", "lost_response"]
    code = main(["run", "agentdojo:banking", "--agent", "naive", "--agent", "recovering", "--seeds", "0", *kinds,
                 "--transport", "memory", "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    capsys.readouterr()
    assert table_main([str(out / "report.json"), "--suite", "banking"]) == 0
    printed = capsys.readouterr().out.splitlines()
    doc = (ROOT / "docs" / "agentdojo.md").read_text(encoding="utf-8").splitlines()
    assert printed[0] in doc  # the header: the same agents, in the same order
    conditions = [line.split(" | ")[1] for line in printed[2:]]
    assert conditions == ["clean", "injection", "lost_response", "transient_error", "attack success"]
    missing = [line for line in printed[2:] if line not in doc]
    assert not missing, "docs/agentdojo.md's table disagrees with the code: " + "; ".join(missing)

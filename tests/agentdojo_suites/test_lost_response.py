"""lost_response on an AgentDojo suite: `verify` proves it solvable (the recovering agent checks the transactions and
does not pay twice) and biting (the naive agent stops), and it is refused where no read the agent can call shows the
write (travel)."""

from __future__ import annotations

import pytest

from mcp_hazard.cli import main

from .support import suite  # noqa: F401  (skips the module without the agentdojo extra)

pytestmark = pytest.mark.e2e


def test_verify_banking_lost_response_is_solvable_and_biting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "agentdojo:banking", "--hazard", "lost_response", "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "all solvable, all biting" in out and "23 instances" in out


def test_travel_has_no_write_the_agent_can_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "agentdojo:travel", "--hazard", "lost_response", "--seeds", "0"]) == 2
    err = capsys.readouterr().err
    assert "--hazard lost_response can act in none of the 20 selected tasks" in err
    assert "a read that shows it and takes only the write's own arguments" in err and err.count("\n") == 1

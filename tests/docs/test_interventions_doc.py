"""docs/interventions.md as a reader follows it: every command run as written, in order, in a fresh folder, and what
the doc shows compared with what was printed (tests/docs/session.py). The doc's `/tmp/` is the session's folder; the
MCP Inspector CLI (`mcp-inspector`, a third-party client from npm) is the one the suite installs in .cache, given the
suite's bound on waits as its connect timeout (its own 15 s is exceeded on a busy machine: docs/decisions.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import WAIT_S

from .coverage import to_run
from .session import play, session

pytestmark = pytest.mark.e2e

DOC = "docs/interventions.md"


def test_interventions_doc(tmp_path: Path) -> None:
    """Each intervention's listing, composition, a run with every intervention and its scores."""
    with session(tmp_path, paths={"/tmp/": f"{tmp_path}/"}) as shell:
        play(shell, to_run(DOC, "test_interventions_doc"))


def test_interventions_through_the_inspector(tmp_path: Path, inspector_bin: Path) -> None:
    """Serving with interventions: stdio and HTTP, listed and called through the MCP Inspector CLI, which exits 5
    when a tool answers with an error (the call the doc makes without the augmented argument)."""
    env = {"MCP_CATALOG_PATH": str(tmp_path / "catalog.json"), "MCP_CLIENT_CONFIG_PATH": str(tmp_path / "client.json")}
    refused = ('mcp-inspector --cli "$URL" --method tools/call --tool-name tool_juniper --tool-arg flight_id=AU-412 '
               "--format json -q")  # fmt: skip
    bounded = tmp_path / ".bin" / "mcp-inspector"
    bounded.parent.mkdir()
    bounded.write_text(f'#!/bin/sh\nexec {inspector_bin} "$@" --connect-timeout={int(WAIT_S * 1000)}\n')
    bounded.chmod(0o755)
    with session(tmp_path, paths={"/tmp/": f"{tmp_path}/"}, extra_path=[bounded.parent], extra_env=env,
                 codes={refused: 5}) as shell:  # fmt: skip
        play(shell, to_run(DOC, "test_interventions_through_the_inspector"))

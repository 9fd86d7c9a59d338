"""docs/interventions.md as a reader follows it: every command run as written, in order, in a fresh folder, and what
the doc shows compared with what was printed (tests/docs/session.py). The doc's `/tmp/` is the session's folder; the
MCP Inspector CLI (`mcp-inspector`, a third-party client from npm) is the one the suite installs in .cache."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    with session(tmp_path, paths={"/tmp/": f"{tmp_path}/"}, extra_path=[inspector_bin.parent], extra_env=env,
                 codes={refused: 5}) as shell:  # fmt: skip
        play(shell, to_run(DOC, "test_interventions_through_the_inspector"))

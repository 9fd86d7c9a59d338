"""The shipped scenarios, end to end through the real CLI: every file validates, every hazard instance is proven
solvable for several seeds, and `verify` shows every instance is solved by the recovering agent and bites the naive
one (this is the check .ci/run relies on for the shipped scenarios)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_hazard", *args], cwd=ROOT, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=timeout,
    )  # fmt: skip


def test_validate_proves_every_hazard_solvable() -> None:
    done = cli("validate", "scenarios", "--hazard", "all", "--seeds", "0-4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == len(list((ROOT / "scenarios").glob("*.yaml")))
    assert all(" ok (" in line and "hazard instances solvable" in line for line in lines), done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.e2e
def test_verify_shipped_scenarios() -> None:
    done = cli("verify", "scenarios", "--seeds", "0", "--concurrency", "4")
    assert done.returncode == 0, done.stderr
    assert "all solvable, all biting" in done.stdout
    instances = int(done.stdout.split("verify: ")[1].split(" instances")[0])
    assert instances >= 100  # 16 tasks x (clean + every applicable kind)

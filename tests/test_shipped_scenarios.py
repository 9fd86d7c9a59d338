"""The shipped scenarios, end to end through the CLI (`main()` in the test's process: the commands' words, not the
process, are the subject): every file validates, every hazard instance is proven solvable for several seeds, and
`verify` shows every instance is solved by the recovering agent and bites the naive one (this is the check .ci/run
relies on for the shipped scenarios)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CliRun, run_main

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> CliRun:
    return run_main(*args, cwd=ROOT)


def test_validate_proves_every_hazard_solvable() -> None:
    done = cli("validate", "scenarios", "--hazard", "all", "--seeds", "0-4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == len(list((ROOT / "scenarios").glob("*.yaml")))
    assert all(" ok (" in line and "hazard instances solvable" in line for line in lines), done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.e2e
def test_verify_shipped_scenarios() -> None:
    done = cli("verify", "scenarios", "--seeds", "0", "--concurrency", "16")  # latency's waits overlap
    assert done.returncode == 0, done.stderr
    assert "all solvable, all biting" in done.stdout
    instances = int(done.stdout.split("verify: ")[1].split(" instances")[0])
    assert instances >= 100  # 16 tasks x (clean + every applicable kind)

"""The run folder of `run` (and the trace folder of `serve` for a suite that is not a file): claimed for one run,
with a copy of every scenario it plays and the plan of hazard kinds kept in it, so `score` reads it alone later."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_hazard.scenario.files import LoadedScenario


def keep_scenarios(scenarios: list[LoadedScenario], out: Path) -> None:
    """A copy of each scenario file in the run folder (`scenarios/ID-SHA12.yaml`), so `score` finds the exact file
    by its hash from anywhere, even after the original moved or changed; each written whole or not at all."""
    from mcp_hazard.trace.storage import storage_error, write_file

    folder = out / "scenarios"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(folder, exc) from None
    for scenario in scenarios:
        target = folder / f"{scenario.id}-{scenario.sha256[:12]}{scenario.source_suffix}"
        if not target.exists():
            write_file(target, scenario.source_bytes())


@contextmanager
def closing(sock: socket.socket | None) -> Iterator[socket.socket | None]:
    """The socket for the block, closed after it (the server closes it too; closing twice is harmless)."""
    try:
        yield sock
    finally:
        if sock is not None:
            sock.close()


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """The run folder for this run alone: writable (a probe, one line if not), locked against a second run
    (runner/lock.py)."""
    from mcp_hazard.runner.lock import run_folder_lock
    from mcp_hazard.trace.storage import check_writable

    check_writable(out, "the run folder")
    with run_folder_lock(out):
        yield


@contextmanager
def claimed(out: Path, scenarios: list[LoadedScenario], kinds: list[dict[str, Any]]) -> Iterator[None]:
    """The run folder for this run alone (`locked`), with the scenarios and the plan of hazard kinds
    (scoring/run_plan.py) kept in it."""
    from mcp_hazard.scoring.run_plan import record_plan

    with locked(out):
        keep_scenarios(scenarios, out)
        record_plan(out, kinds)
        yield

"""A trace folder from a stranger, scored through the real CLI in its own process: files named like traces or run logs
that are not regular files (a FIFO, a link to an endless device, a link that loops) are each a one-line warning;
`score` neither waits for a writer nor reads without end, and scores the traces beside them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import TRAVEL, run_main

from .test_runs import cli

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of one task (clean and one hazard), then, in a second folder, a copy of one trace beside a run
    log and a plan that are FIFOs, and, among the traces, a FIFO, a link to /dev/zero and a link that loops."""
    out = tmp_path_factory.mktemp("strange")
    done = run_main("run", str(TRAVEL), "--task", "fare-class", "--hazard", "transient_error", "--agent",
                    "recovering", "--transport", "memory", "--no-progress", "--out", str(out / "run"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    traces = out / "run" / "traces"
    other = out / "run" / "other"
    other.mkdir()
    shutil.copy(sorted(traces.glob("*.jsonl"))[0], other / "copied.jsonl")
    for fifo in (traces / "waiting.jsonl", other / "run.jsonl", other / "plan.jsonl"):
        os.mkfifo(fifo)
    (traces / "endless.jsonl").symlink_to("/dev/zero")
    (traces / "loop.jsonl").symlink_to("loop.jsonl")
    return out / "run"


def test_special_files_are_one_line_warnings_and_the_traces_are_scored(folder: Path) -> None:
    done = cli("score", str(folder), "--out", str(folder.parent / "report.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for name, why in (("traces/waiting", "not a regular file"), ("traces/endless", "not a regular file"),
                      ("traces/loop", "Too many levels of symbolic links"), ("other/run", "not a regular file"),
                      ("other/plan", "not a regular file")):  # fmt: skip
        assert f"mcp-hazard: warning: {folder / name}.jsonl: cannot read: {why}; file skipped\n" in done.stderr
    report = json.loads((folder.parent / "report.json").read_text(encoding="utf-8"))
    assert report["episodes"] == 3  # the run's two and the copy beside the FIFO run log
    assert len(done.stderr.splitlines()) == 6, done.stderr  # those five, and where the report went

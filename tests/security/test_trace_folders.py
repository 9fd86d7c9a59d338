"""A trace folder from a stranger, scored through the real CLI in its own process: files named like traces or run logs
that are not regular files (a FIFO, a link to an endless device, a link that loops) are each a one-line warning;
`score` neither waits for a writer nor reads without end, and scores the traces beside them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import TRAVEL, run_main

from tests.scoring.test_report_support import embedded_episodes

from .test_runs import cli, one_error

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


def test_gate_and_proxy_replay_name_a_fifo_instead_of_waiting_on_it(folder: Path, tmp_path: Path) -> None:
    """`open()` of a FIFO waits for a writer: a gate whose report.json is one said 'no report.json in it', a
    cassette that is one made `proxy --replay` wait for ever, and `score --scenarios` passed over one in silence."""
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "report.json")
    os.mkfifo(tmp_path / "cassette.jsonl")
    for args, said in (
        (["gate", str(tmp_path / "run"), "--min", "overall=0.5"], f"RUN_DIR {tmp_path / 'run'}: its report.json is "
         "a FIFO, not a file"),
        (["gate", str(folder / "traces" / "waiting.jsonl"), "--min", "overall=0.5"],
         f"RUN_DIR {folder / 'traces' / 'waiting.jsonl'}: a FIFO, not a run folder or a report.json"),
        (["proxy", "--replay", str(tmp_path / "cassette.jsonl")],
         f"{tmp_path / 'cassette.jsonl'}: cannot read cassette: a FIFO, not a file"),
        (["score", str(folder / "other" / "copied.jsonl"), "--scenarios", str(tmp_path / "cassette.jsonl")],
         f"--scenarios {tmp_path / 'cassette.jsonl'}: a FIFO, not a folder or a scenario file"),  # it was ignored
    ):  # fmt: skip
        done = cli(*args)
        assert done.returncode == 2 and done.stderr.splitlines() == [f"mcp-hazard: error: {said}"], done.stderr


def _damaged(source: Path, out: Path, line: int, change: dict[str, Any]) -> None:
    """`source` with line `line` (1-based) updated by `change` (a None value drops the key), written to `out`."""
    events = [json.loads(text) for text in source.read_text(encoding="utf-8").splitlines()]
    events[line - 1] = {k: v for k, v in {**events[line - 1], **change}.items() if v is not None}
    out.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


DAMAGE: list[tuple[str, int, dict[str, Any], str]] = [  # (name, line, change, warning after the path, or "")
    ("condition-list", 1, {"condition": []}, ":1: episode_started: condition: Input should be a valid dictionary"),
    ("kind-object", 3, {"kind": {"a": 1}}, ":3: hazard_fired: kind: Input should be a valid string"),
    (
        "slot-text",
        3,
        {"slot": "one"},
        ":3: hazard_fired: slot: Input should be a valid integer, unable to parse string as an integer",
    ),
    ("version-empty", 1, {"schema_version": ""}, ":1: trace schema_version '' is not a version number"),
    ("type-list", 2, {"type": ["x"]}, ":2: unknown event type ['x']; skipped"),
    ("tools-number", 2, {"tools": 5}, ""),  # scored; the report's timeline shows no tools
    ("notes-not-objects", 11, {"events": ["x", 3]}, ""),
    # A path no file system takes (is_file raised): its scenario is not found, one warning for all such traces.
    ("path-too-long", 1, {"scenario": {"id": "travel", "path": "a" * 5000, "sha256": "0"}}, ""),
]


def test_traces_with_fields_of_the_wrong_shape_are_one_line_each_and_the_rest_is_scored(tmp_path: Path) -> None:
    """A trace edited by hand or written by another program: a field of the wrong JSON type made `score` end in an
    AttributeError or TypeError (in scoring, in the report's tables, or in the HTML timeline). Each such trace is
    now one warning naming its line, event and field, and every other trace is scored and reported."""
    done = run_main("run", str(TRAVEL), "--task", "fare-class", "--hazard", "transient_error", "--agent",
                    "recovering", "--transport", "memory", "--no-progress", "--out", str(tmp_path / "run"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    traces = tmp_path / "run" / "traces"
    hazard = next(traces.glob("*transient_error*.jsonl"))
    for name, line, change, _ in DAMAGE:
        _damaged(hazard, traces / f"{name}.jsonl", line, change)
    report = tmp_path / "report.html"
    done = cli("score", str(tmp_path / "run"), "--out", str(report), "--per-episode", str(tmp_path / "rows.csv"))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    for name, _, _, warning in DAMAGE:
        lines = [ln for ln in done.stderr.splitlines() if f"{traces / name}.jsonl" in ln]
        if warning:
            assert len(lines) == 1 and lines[0].endswith(
                warning + ("" if "skipped" in warning else "; trace not scored")
            ), (name, lines)
        else:
            assert not lines, (name, lines)
    rows = (tmp_path / "rows.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 2 + 3  # the run's two, and the three damaged traces that still score
    assert "'travel' (recorded path aaaa" in done.stderr and "1 trace not scored" in done.stderr
    shown = {Path(e["trace"]).stem: e for e in embedded_episodes(report.read_text(encoding="utf-8"))}
    assert {"tools-number", "notes-not-objects", "type-list"} <= set(shown), sorted(shown)
    assert all(e.get("timeline") for e in shown.values()), "every episode's timeline is drawn"


def test_a_report_file_is_replaced_whole_or_kept_when_the_disk_fills(folder: Path, tmp_path: Path) -> None:
    """`score --out`, `gate --junit` and `diff --out` write beside the file and rename: a disk that fills mid-write
    leaves the report of the last run as it was (before: truncated, then cut short where the disk filled)."""
    from .disk import full_disk

    run = folder.parent / "run-copy"
    shutil.copytree(folder, run, ignore=shutil.ignore_patterns("waiting.jsonl", "endless.jsonl", "loop.jsonl", "other"))
    report = tmp_path / "report.json"
    assert cli("score", str(run), "--out", str(report)).returncode == 0
    kept = report.read_bytes()
    assert len(kept) > 4096
    report.write_bytes(kept[:100] + b"  the last run's report " + kept[100:])  # the same report, told apart
    before = report.read_bytes()
    done = cli("score", str(run), "--out", str(report), preexec=full_disk(4096))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == f"mcp-hazard: error: {report}: cannot write report: File too large"
    assert report.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    assert cli("score", str(run), "--out", str(report)).returncode == 0 and report.read_bytes() == kept


def test_a_file_too_large_to_read_whole_is_one_line_and_the_rest_is_scored(folder: Path, tmp_path: Path) -> None:
    """A sparse file costs a stranger no disk whatever its size; read whole, 100 GB would take all memory. A trace,
    a run log or a report.json over MAX_READ_BYTES is refused from its size, before a byte is read."""
    from mcp_hazard.regular_file import MAX_READ_BYTES

    run = tmp_path / "run"
    shutil.copytree(folder, run, ignore=shutil.ignore_patterns("waiting.jsonl", "endless.jsonl", "loop.jsonl", "other"))
    traces = sorted((run / "traces").glob("*.jsonl"))
    huge = traces[0]
    with huge.open("ab") as handle:
        handle.truncate(MAX_READ_BYTES + 1)  # sparse: no disk, no time
    done = cli("score", str(run), "--out", str(tmp_path / "report.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"mcp-hazard: warning: {huge}: cannot read trace: {MAX_READ_BYTES + 1:,} bytes, larger than the 1 GiB " \
           "limit on a file read whole; trace not scored" in done.stderr.splitlines()  # fmt: skip
    assert json.loads((tmp_path / "report.json").read_text())["episodes"] == len(traces) - 1
    report = run / "report.json"
    shutil.copy(tmp_path / "report.json", report)
    with report.open("ab") as handle:
        handle.truncate(MAX_READ_BYTES + 1)
    one_error(cli("gate", str(run), "--min", "overall=0.1"), f"{report}: cannot read", "1 GiB limit")

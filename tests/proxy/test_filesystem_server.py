"""The npm reference filesystem server on a folder behind the proxy: the kinds that need what its tools offer
(a fallback, an independent source, a paged listing) fire and are recovered by the recovering agent, and a tool with
side effects is never retried."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_main

from .support import PROXIES, events

pytestmark = pytest.mark.e2e

KINDS = ["permanent_error", "conflict", "pagination", "silent_wrong_value", "invocation_error", "output_drift",
         "transient_error"]  # fmt: skip


def test_every_kind_that_applies_fires_and_is_recovered_on_the_filesystem_server(
    tmp_path: Path, npm_servers: dict[str, Path], fs_root: Path
) -> None:
    """Each kind once, on a task it applies to: pagination on the listing task, the others on the reading task."""
    upstream = f"{npm_servers['filesystem']} {fs_root}"  # a temporary copy: the proxy file's paths are relative
    rows = []
    for task, kinds in (("apples", [k for k in KINDS if k != "pagination"]), ("last-crate", ["pagination"])):
        out = tmp_path / task
        hazards = [arg for kind in kinds for arg in ("--hazard", kind)]
        done = run_main("run", str(PROXIES / "filesystem.yaml"), "--upstream-cmd", upstream, "--transport",
                        "memory", "--task", task, "--out", str(out), "--no-progress", *hazards,
                        cwd=REPO_ROOT)  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows += json.loads((out / "report.json").read_text(encoding="utf-8"))["per_episode"]
    seen: set[str] = set()
    for row in rows:
        kind = row["condition"]
        if kind == "clean":
            assert row["correct"], row
            continue
        seen.add(kind)
        assert kind in row["hazards_fired"], row
        if row["agent"] == "recovering":
            assert row["correct"] and kind in row["hazards_recovered"], row
        else:
            assert not row["correct"], row
    assert seen == set(KINDS)
    fallback = next((tmp_path / "apples" / "traces").glob("recovering.filesystem.apples.permanent_error*.jsonl"))
    tools = [e["tool"] for e in events(fallback) if e["type"] == "tool_called"]
    assert tools[:2] == ["read_text_file", "read_file"]  # the declared fallback answered
    paged = next((tmp_path / "last-crate" / "traces").glob("recovering.filesystem.last-crate.pagination*.jsonl"))
    pages = [e["arguments"].get("page", 1) for e in events(paged) if e["type"] == "tool_called"]  # type: ignore[union-attr]
    assert pages[:6] == [1, 2, 3, 4, 5, 6]  # every page read (the agent then re-reads what it uses)


def test_a_tool_with_side_effects_is_never_given_a_retry_hazard(
    tmp_path: Path, npm_servers: dict[str, Path], fs_root: Path
) -> None:
    upstream = f"{npm_servers['filesystem']} {fs_root}"
    done = run_main("proxy", str(PROXIES / "filesystem.yaml"), "--upstream-cmd", upstream, "--hazard",
                    "transient_error:tools=edit_file", "--trace-dir", str(tmp_path), cwd=REPO_ROOT)  # fmt: skip
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("mcp-hazard")]  # the server prints its own
    assert len(ours) == 1 and "'edit_file' may have side effects" in ours[0] and "Traceback" not in done.stderr

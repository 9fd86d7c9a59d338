"""Damaged traces, generated: real traces with 1-4 changes: a field of an event dropped, or made null, a number, text,
a list, an object, or nested 900 levels deep; an event dropped, repeated, or moved. Whatever the change, scoring,
the report's tables and every report format finish; a trace that cannot be scored is one warning naming its file,
never an exception.

tests/security/test_trace_folders.py shows the messages for hand-made cases; this is the net under them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import TRAVEL, run_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_hazard.scoring.aggregate import aggregate
from mcp_hazard.scoring.collect import score_traces
from mcp_hazard.scoring.report import FORMATS, render


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


LEAVES = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8)
VALUES = (
    st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                      max_size=3), max_leaves=6)
    | st.just(_deep(900))
    | st.just({"type": "tool_called"})
)  # fmt: skip
DROP = object()  # the field is removed
OPERATIONS = ("set", "set", "set", "drop event", "repeat event", "move event")
CHANGE = st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 50), st.integers(0, 20), VALUES | st.just(DROP))
CHANGES = st.lists(CHANGE, min_size=1, max_size=4)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[dict[str, Any]]]]:
    """A real run (two agents, clean and two hazards) and its traces' events."""
    out = tmp_path_factory.mktemp("damaged") / "run"
    done = run_main("run", str(TRAVEL), "--task", "fare-class", "--hazard", "transient_error", "--hazard",
                    "silent_wrong_value", "--agent", "naive", "--agent", "recovering", "--transport", "memory",
                    "--call-timeout", "2", "--no-progress", "--out", str(out))  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    traces = sorted((out / "traces").glob("*.jsonl"))
    return out, [[json.loads(line) for line in t.read_text(encoding="utf-8").splitlines()] for t in traces]


def _changed(events: list[dict[str, Any]], changes: list[tuple[str, int, int, Any]]) -> list[dict[str, Any]]:
    events = [dict(e) for e in events]
    for operation, which, other, value in changes:
        index = which % len(events)
        if operation == "drop event" and len(events) > 1:
            events.pop(index)
        elif operation == "repeat event":
            events.insert(other % (len(events) + 1), dict(events[index]))
        elif operation == "move event":
            events.insert(other % len(events), events.pop(index))
        else:
            event = events[index]
            key = sorted(event)[other % len(event)]
            if value is DROP:
                event.pop(key)
            else:
                event[key] = value
    return events


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trace=st.integers(0, 5), changes=CHANGES)
def test_a_damaged_trace_never_stops_scoring_or_a_report(
    run: tuple[Path, list[list[dict[str, Any]]]], tmp_path: Path, trace: int, changes: list[tuple[str, int, int, Any]]
) -> None:
    folder, traces = run
    here = tmp_path / "one"
    shutil.rmtree(here, ignore_errors=True)
    shutil.copytree(folder / "scenarios", here / "scenarios")
    (here / "traces").mkdir()
    events = _changed(traces[trace % len(traces)], changes)
    damaged = here / "traces" / "damaged.jsonl"
    damaged.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    shutil.copy(next((folder / "traces").glob("*.jsonl")), here / "traces" / "whole.jsonl")
    scored = score_traces([str(here)], timelines=True)
    assert any(s.trace.endswith("whole.jsonl") for s in scored.scores)  # the other trace is scored
    if not any(s.trace.endswith("damaged.jsonl") for s in scored.scores):  # then it is said why, or it is no trace
        said = any("damaged.jsonl" in w for w in scored.warnings) or any(
            u["trace"].endswith("damaged.jsonl") for u in scored.unscorable
        )
        assert said or events[0].get("type") != "episode_started", scored.warnings
    report = aggregate(scored.scores, scored.warnings, scored.unscorable, scored.scenarios, scored.plan,
                       scored.suite_parts)  # fmt: skip
    for fmt in FORMATS:
        assert render(report, fmt, timelines=scored.timelines)

"""`append_event`: the runner's `agent_ended` goes after whatever the server wrote, numbered after its last complete
line, even when the server was killed mid-line; the reader still reports the damage and keeps both ends."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_hazard.trace.events import AgentEnded, comparable
from mcp_hazard.trace.reader import read_trace
from mcp_hazard.trace.writer import append_event


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def test_appended_after_the_last_event_with_the_next_seq(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"seq":0,"type":"episode_started"}\n{"seq":1,"type":"episode_ended"}\n', encoding="utf-8")
    event = append_event(path, AgentEnded, outcome="timeout", detail="stopped after 3s", events=[])
    assert event["seq"] == 2 and event["outcome"] == "timeout"
    assert json.loads(lines(path)[2]) == event
    assert lines(path)[3] == ""


def test_a_cut_last_line_stays_cut_and_the_new_event_is_a_line_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"seq":0,"type":"episode_started","schema_version":1}\n{"seq":1,"type":"tool_ca', encoding="utf-8")
    append_event(path, AgentEnded, outcome="agent_crashed", detail="exit code 3")
    assert lines(path)[1] == '{"seq":1,"type":"tool_ca'
    assert json.loads(lines(path)[2])["seq"] == 1  # after the last *complete* line (seq 0)
    trace = read_trace(path)
    assert [e["type"] for e in trace.events] == ["episode_started", "agent_ended"]
    assert trace.warnings and "invalid JSON" in trace.warnings[0]


def test_a_missing_trace_gets_seq_zero(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "t.jsonl"
    assert append_event(path, AgentEnded, outcome="finished")["seq"] == 0
    assert path.exists()


def test_detail_is_volatile_and_outcome_and_events_are_not() -> None:
    one = {"seq": 3, "ts": "a", "type": "agent_ended", "outcome": "finished", "detail": "port 4000", "events": []}
    two = {**one, "ts": "b", "detail": "port 5000"}
    assert comparable(one) == comparable(two)
    assert comparable(one) != comparable({**one, "outcome": "timeout"})
    assert comparable(one) != comparable({**one, "events": [{"kind": "text_reply"}]})

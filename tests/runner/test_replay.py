"""`mcp-hazard replay`: a recorded episode's actions, re-run against the same condition, give the same trace (apart
from times, durations and where it ran); a tampered trace or a changed scenario is caught; YAML scripts of calls run
as episodes; bad input is one line."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.runner.replay_check import replay_trace
from mcp_hazard.runner.replay_source import read_recorded
from mcp_hazard.trace.reader import read_trace

from .support import REPO_ROOT, TRAVEL, Ran, assert_trace_ended, jsonl, main_cli, no_traceback

IDENTICAL = re.compile(
    r"^replay: \d+ events, identical to (?P<path>\S+) apart from times, durations and the run block$"
)
MATRIX = ["--agent", "naive", "--agent", "recovering", "--hazard", "transient_error", "--hazard", "spec_drift",
          "--call-timeout", "0.3", "--seeds", "0", "--no-progress"]  # fmt: skip
LATENCY = ["--hazard", "latency:seconds=1"]  # memory only: calls cancelled by a client timeout, replayed (slow)


def one_line_error(ran: Ran, code: int = 2) -> str:
    """The one stderr line of a refused replay: exit 2 for bad input, 1 for a finding (a difference)."""
    assert ran.code == code, ran.explain()
    assert no_traceback(ran.stdout + ran.stderr), ran.explain()
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{ran.explain()}"
    assert lines[0].startswith("mcp-hazard: ") or ": " in lines[0], ran.explain()
    return lines[0]


@pytest.fixture(scope="module", params=["memory", pytest.param("http", marks=pytest.mark.e2e)])
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The traces of a small matrix (naive and recovering; clean, transient_error, spec_drift, latency)."""
    out = tmp_path_factory.mktemp(f"recorded-{request.param}")
    extra = LATENCY if request.param == "memory" else []
    ran = main_cli("run", "scenarios/travel.yaml", *MATRIX, *extra, "--transport", request.param, "--out", str(out))
    assert ran.code == 0, ran.explain()
    traces = sorted((out / "traces").glob("*.jsonl"))
    assert len(traces) == 4 * (3 + bool(extra)) * 2  # tasks x conditions x agents
    return traces


def test_every_recorded_trace_replays_identically(recorded: list[Path]) -> None:
    kinds: set[str] = set()
    cancelled = 0
    for path in recorded:
        episode = read_recorded(str(path), scenarios=None, allow_python=False)
        old, new, difference = replay_trace(episode, transport="memory")
        assert difference is None, f"{path.name}: {difference}"
        assert old.events[-1]["type"] == "agent_ended"  # the runner's account, not replayed
        assert len(new.events) == len(old.events) - 1
        kinds.update(e["kind"] for e in old.of_type("hazard_fired"))
        cancelled += sum(1 for e in old.of_type("tool_called") if e["outcome"] == "cancelled")
    if any(".latency-" in path.name for path in recorded):
        assert kinds == {"transient_error", "spec_drift", "latency"}
        assert cancelled > 0, "no call was cancelled by a client timeout: the latency traces do not test that replay"
    else:
        assert kinds == {"transient_error", "spec_drift"}


@pytest.mark.e2e
@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
def test_replay_command_says_identical(transport: str, recorded: list[Path]) -> None:
    """The CLI itself on one rich trace (the recovering agent under spec drift), replayed over each transport."""
    path = next(p for p in recorded if p.name.startswith("recovering.travel.fare-in-dollars.spec_drift"))
    ran = main_cli("replay", str(path), "--transport", transport)
    assert ran.code == 0, ran.explain()
    assert ran.stderr.strip() == "", ran.explain()
    match = IDENTICAL.match(ran.stdout.strip())
    assert match is not None and match["path"] == str(path), ran.explain()


def tampered_copy(source: Path, target: Path, which: int) -> tuple[int, dict[str, Any]]:
    """Copy a trace, changing one argument of its `which`-th tool_called event; returns (event index, new args)."""
    events = jsonl(source)
    indexes = [i for i, e in enumerate(events) if e["type"] == "tool_called"]
    index = indexes[which]
    arguments = dict(events[index]["arguments"])
    if "flight_id" in arguments:
        arguments["flight_id"] = "AU-418"
    else:
        arguments["amount"] = float(arguments["amount"]) + 100
    events[index]["arguments"] = arguments
    target.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return index, arguments


@pytest.mark.parametrize("which", [0, -1], ids=["first-call", "last-call"])
def test_a_tampered_trace_is_caught_at_its_first_difference(which: int, recorded: list[Path], tmp_path: Path) -> None:
    source = next(p for p in recorded if p.name == "recovering.travel.fare-in-dollars.clean.strict.s0.jsonl")
    assert replay_trace(read_recorded(str(source), scenarios=None, allow_python=False), transport="memory")[2] is None
    target = tmp_path / "tampered.jsonl"
    index, _arguments = tampered_copy(source, target, which)
    ran = main_cli("replay", str(target))
    line = one_line_error(ran, code=1)
    assert line.startswith(f"mcp-hazard: replay differs from {target}: event {index} (tool_called): fields ")
    fields = re.search(r"fields (\[.*\]) differ", line)
    assert fields is not None and "'result'" in fields.group(1), line
    assert ran.stdout == ""


def test_a_trace_whose_scenario_changed_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "scenario"
    folder.mkdir()
    copy = folder / "travel.yaml"
    shutil.copyfile(TRAVEL, copy)
    out = tmp_path / "out"
    ran = main_cli("run", str(copy), "--agent", "recovering", "--hazard", "transient_error", "--transport", "memory",
                   "--out", str(out), "--no-progress")  # fmt: skip
    assert ran.code == 0, ran.explain()
    trace = out / "traces" / "recovering.travel.fare-class.transient_error.strict.s0.jsonl"
    assert_trace_ended(trace)
    assert read_trace(trace).started["scenario"]["path"] == str(copy)  # type: ignore[index]
    assert main_cli("replay", str(trace)).code == 0

    text = copy.read_text(encoding="utf-8")
    edited = text.replace("description: Look up the three-letter", "description: Find the three-letter", 1)
    copy.write_text(edited, encoding="utf-8")  # still a valid scenario, with another sha256
    assert copy.read_text(encoding="utf-8") != text
    line = one_line_error(main_cli("replay", str(trace)))
    assert str(copy) in line and "changed since the trace was recorded" in line, line


def test_a_moved_scenario_replays_with_the_scenarios_option(tmp_path: Path) -> None:
    """`replay --scenarios DIR` is for a scenario file that moved (cli.py: "folder with the scenario file, if it
    moved"). The file is found by id and its sha256 matches, but the new trace's episode_started names the new path,
    and `scenario` is not a volatile field (trace/events.py VOLATILE_FIELDS = ts, duration_ms, run): the replay then
    always "differs" at event 0, so a moved scenario can never be replayed as identical."""
    first, moved = tmp_path / "first", tmp_path / "moved"
    first.mkdir()
    moved.mkdir()
    shutil.copyfile(TRAVEL, first / "travel.yaml")
    out = tmp_path / "out"
    ran = main_cli("run", str(first / "travel.yaml"), "--agent", "naive", "--hazard", "declared", "--transport",
                   "memory", "--out", str(out), "--no-progress")  # fmt: skip
    assert ran.code == 0, ran.explain()
    trace = out / "traces" / "naive.travel.fare-class.clean.strict.s0.jsonl"
    (first / "travel.yaml").rename(moved / "travel.yaml")
    assert "no such file" in one_line_error(main_cli("replay", str(trace))).lower()
    ran = main_cli("replay", str(trace), "--scenarios", str(moved))
    assert ran.code == 0 and IDENTICAL.match(ran.stdout.strip()), ran.explain()


# -- YAML replay scripts --------------------------------------------------------------------------------------------


def write_script(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_script_runs_as_an_episode_and_prints_the_verdict(tmp_path: Path) -> None:
    shutil.copyfile(TRAVEL, tmp_path / "travel.yaml")  # `scenario:` is found next to the script
    traces = tmp_path / "traces"
    script = write_script(
        tmp_path,
        "fare-class.yaml",
        f"""
scenario: travel.yaml
task: fare-class
seed: 3
hazards: ["transient_error:times=1,tools=get_fare"]
calls:
  - {{tool: get_fare, arguments: {{flight_id: AU-426}}}}
  - {{tool: get_fare, arguments: {{flight_id: AU-426}}}}
answer: Standard
trace_dir: {traces}
""",
    )
    ran = main_cli("replay", str(script))
    assert ran.code == 0, ran.explain()
    match = re.fullmatch(r"replay: 2 calls, answer 'Standard': correct; trace (\S+)", ran.stdout.strip())
    assert match is not None, ran.explain()
    trace = Path(match.group(1))
    assert trace.parent == traces
    events = assert_trace_ended(trace)
    assert events[0]["condition"]["seed"] == 3 and events[0]["task"] == "fare-class"
    assert events[0]["scenario"]["path"] == str(tmp_path / "travel.yaml")
    calls = [e for e in events if e["type"] == "tool_called"]
    assert [c["outcome"] for c in calls] == ["rejected", "ok"]  # the 503, then the retry
    assert [e["answer"] for e in events if e["type"] == "answer_submitted"] == ["Standard"]
    assert [e["kind"] for e in events if e["type"] == "hazard_fired"] == ["transient_error"]


def test_a_script_with_a_wrong_answer_says_so(tmp_path: Path) -> None:
    """'Flex' is a fare class, but not one the script's calls ever saw: an invented answer."""
    script = write_script(
        tmp_path,
        "wrong.yaml",
        f"""
scenario: {TRAVEL}
task: fare-class
calls: [{{tool: get_fare, arguments: {{flight_id: AU-426}}}}]
answer: Flex
trace_dir: {tmp_path / "traces"}
""",
    )
    ran = main_cli("replay", str(script))
    assert ran.code == 1, ran.explain()  # a script whose answer is wrong fails, so it can gate CI on its own
    assert re.fullmatch(r"replay: 1 calls, answer 'Flex': not correct \(invented\); trace \S+", ran.stdout.strip())


BAD_SCRIPTS = {
    "not-a-mapping": ("- a\n- b\n", "a replay script needs"),
    "calls-not-a-list": ("scenario: {travel}\ncalls: {{tool: get_fare}}\n", "a replay script needs"),
    "call-without-tool": ("scenario: {travel}\ncalls:\n  - {{arguments: {{}}}}\n", "calls[0]"),
    "unknown-hazard": ("scenario: {travel}\nhazards: [no_such_kind]\ncalls: []\n", "no_such_kind"),
    "unknown-task": ("scenario: {travel}\ntask: no-such-task\ncalls: []\n", "no-such-task"),
    "missing-scenario-file": ("scenario: no-such-scenario.yaml\ncalls: []\n", "no-such-scenario.yaml"),
    # Each of these ends in a traceback or a multi-line message today:
    "yaml-syntax-error": ("scenario: [unclosed\n", "script.yaml"),
    "scenario-not-a-string": ("scenario: 42\ncalls: []\n", "scenario"),
    "arguments-not-a-mapping": (
        "scenario: {travel}\ntask: fare-class\ncalls:\n  - {{tool: get_fare, arguments: [1, 2]}}\n"
        "trace_dir: {traces}\n", "arguments",
    ),
    # A script may come from a stranger too: the scenario loader's limits hold for it.
    "alias-bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                  for p, c in zip("abcdefgh", "bcdefghi", strict=True))
        + "scenario: {travel}\ncalls: []\n", "alias expansion limit",
    ),
    "base-60-number": ("scenario: {travel}\nseed: 1:1:1:1\ncalls: []\n", "script.yaml:2:"),
    "trace-dir-not-writable": (
        "scenario: {travel}\ntask: fare-class\ncalls: []\ntrace_dir: {blocked}/traces\n", "traces",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_SCRIPTS))
def test_a_malformed_script_is_a_one_line_error(case: str, tmp_path: Path) -> None:
    template, mentions = BAD_SCRIPTS[case]
    blocked = tmp_path / "a-file"
    blocked.write_text("a file where a folder is expected\n", encoding="utf-8")
    script = write_script(tmp_path, "script.yaml",
                          template.format(travel=TRAVEL, traces=tmp_path / "traces", blocked=blocked))  # fmt: skip
    ran = main_cli("replay", str(script), cwd=tmp_path)
    line = one_line_error(ran)
    assert mentions in line, line
    assert ran.stdout == ""


@pytest.mark.parametrize(
    ("content", "mentions"),
    [(None, "cannot read trace: No such file or directory"), ("", "no episode_started"),
     ('{"type": "tools_listed"}\n', "no episode_started"), ("fifo", "cannot read trace: not a regular file")],
    ids=["missing", "empty", "no-start", "fifo"],
)  # fmt: skip
def test_a_bad_trace_is_a_one_line_error(content: str | None, mentions: str, tmp_path: Path) -> None:
    """A FIFO is refused at once: opening it to read would wait for a writer."""
    path = tmp_path / "trace.jsonl"
    if content == "fifo":
        os.mkfifo(path)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    line = one_line_error(main_cli("replay", str(path), cwd=REPO_ROOT))
    assert mentions in line and str(path) in line, line


@pytest.mark.parametrize(
    ("field", "value", "mentions"),
    [("condition", True, ":1: episode_started: condition: Input should be a valid dictionary; nothing replayed"),
     ("arguments", [], ": tool_called (seq {seq}): arguments: an object or nothing, got list; nothing replayed"),
     ("arguments", {"a": json.loads("[" * 62 + "]" * 62)},  # 3 + 62 levels in the request: one past the limit
      ": tool_called (seq {seq}): arguments: nested deeper than the 64 levels a request may hold; nothing replayed")],
    ids=["condition-not-an-object", "arguments-a-list", "arguments-too-deep"],  # deep: a pydantic ValueError
)  # fmt: skip
def test_a_changed_trace_is_refused_before_anything_runs(
    recorded: list[Path], tmp_path: Path, field: str, value: Any, mentions: str
) -> None:
    """A trace from someone else, changed by hand: a condition that is not an object was a TypeError traceback, and
    a call's arguments that are a list an SDK ValidationError inside an exception group, once the episode had begun."""
    events = jsonl(recorded[0])
    changed = next(e for e in events if field in e)
    changed[field] = value
    path = tmp_path / "changed.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    line = one_line_error(main_cli("replay", str(path), cwd=REPO_ROOT))
    assert line.endswith(mentions.format(seq=changed["seq"])) and str(path) in line, line


@pytest.mark.parametrize("transport", ["memory", pytest.param("http", marks=pytest.mark.e2e)])
def test_a_recorded_condition_no_server_takes_is_one_line_over_each_transport(
    recorded: list[Path], tmp_path: Path, transport: str
) -> None:
    """A hazard kind changed by hand in `episode_started`: over HTTP the episode's server refused it with a 400 that
    reached the command as an HTTPStatusError traceback; now it is the server's own line, as over memory."""
    events = jsonl(next(path for path in recorded if ".transient_error." in path.name))
    events[0]["condition"]["hazards"][0]["kind"] = "ok"
    path = tmp_path / "changed.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    line = one_line_error(main_cli("replay", str(path), "--transport", transport, cwd=REPO_ROOT))
    assert "hazard #1 (ok): unknown kind; known kinds: " in line, line

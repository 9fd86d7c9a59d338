"""A hazard the user names that can act in none of the selected tasks is an input error in every command that takes
`--hazard`: one line, exit 2, saying why not and for which tasks, before anything runs or is written. (It used to
give a run of clean episodes only, exit 0, and a scorecard that never mentioned it.) `--hazard all` is different: it
means "every kind that can act", and the report lists the rest (tests/scoring/test_left_out.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import WAIT_S, in_ci

from .support import REPO_ROOT, SCENARIOS_DIR, Ran, main_cli, no_traceback, run_cli

pytestmark = pytest.mark.e2e

CALENDAR = str(SCENARIOS_DIR / "calendar.yaml")
TIME = str(REPO_ROOT / "proxies" / "time.yaml")
CONFLICT_NEEDS = "needs a second tool serving the values the task reads, to cross-check with"
CALENDAR_TASKS = "calendar/review-time-in-orinth, calendar/shared-free-hour, calendar/booked-minutes"
PAGES = "the proxy file does not say which list of 'convert_time' to page (tools.convert_time.pages)"


def one_error(ran: Ran) -> str:
    assert ran.code == 2, ran.explain()
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp-hazard: error: "), ran.explain()
    assert no_traceback(ran.stderr) and ran.stdout == "", ran.explain()
    return lines[0]


@pytest.fixture(scope="module")
def time_server() -> str:
    if importlib.util.find_spec("mcp_server_time") is None:
        if in_ci():
            pytest.fail("mcp-server-time is not installed (pip install -e '.[test]')", pytrace=False)
        pytest.skip("mcp-server-time is not installed (pip install -e '.[test]')")
    return f"{sys.executable} -m mcp_server_time"


@pytest.mark.parametrize("command", ["run", "verify", "validate"])
def test_a_named_kind_that_fits_no_task_is_refused_by_every_command_over_scenarios(
    command: str, tmp_path: Path
) -> None:
    out = ["--out", str(tmp_path / "out")] if command != "validate" else []
    line = one_error(main_cli(command, CALENDAR, "--hazard", "conflict", *out))
    assert line == (
        "mcp-hazard: error: --hazard conflict can act in none of the 3 selected tasks, so "
        + ("no instance of it would be checked" if command == "validate" else "no episode would carry it")
        + f": {CONFLICT_NEEDS} ({CALENDAR_TASKS})"
    )
    assert not (tmp_path / "out").exists()  # nothing was run or written


def test_the_task_filter_counts_and_the_parameters_are_shown_as_given(tmp_path: Path) -> None:
    line = one_error(main_cli("run", CALENDAR, "--task", "booked-minutes", "--hazard", "transient_error",
                             "--hazard", "conflict:probability=0.5", "--out", str(tmp_path / "out")))  # fmt: skip
    assert line == ("mcp-hazard: error: --hazard conflict:probability=0.5 cannot act in the selected task, so no "
                    f"episode would carry it: {CONFLICT_NEEDS} (calendar/booked-minutes)")  # fmt: skip


def test_a_kind_that_fits_some_task_still_runs_there_and_validate_says_where_it_fit_nothing(tmp_path: Path) -> None:
    finance = str(SCENARIOS_DIR / "finance.yaml")
    done = main_cli("validate", CALENDAR, finance, "--hazard", "conflict", "--seeds", "0")
    assert done.code == 0, done.explain()
    lines = done.stdout.splitlines()
    assert lines[0].endswith("golden paths reach answers; --hazard conflict can act in none of its tasks)"), lines
    assert "hazard instances solvable" in lines[1] and "can act in none" not in lines[1], lines


def test_serve_over_stdio_says_it_the_same_way() -> None:
    """The real program: over stdio its stdout is the protocol's, and a refusal must leave it empty."""
    line = one_error(run_cli("serve", CALENDAR, "--hazard", "conflict"))
    assert line == ("mcp-hazard: error: --hazard conflict cannot act in the selected task, so no episode would carry "
                    f"it: {CONFLICT_NEEDS} (calendar/review-time-in-orinth)")  # fmt: skip


@pytest.mark.parametrize("flag", [["--hazard", "conflict"], ["--profile", "guided"], ["--seed", "3"],
                                  ["--task", "fare-class"], ["--intervention", "rename"]])  # fmt: skip
def test_serve_over_http_refuses_the_flags_of_a_stdio_episode_instead_of_dropping_them(flag: list[str]) -> None:
    line = one_error(main_cli("serve", str(SCENARIOS_DIR), "--http", "127.0.0.1:0", *flag))
    assert line.startswith(f"mcp-hazard: error: {flag[0]} is for the one episode of `serve` over stdio; over HTTP "
                           "each episode names its own (POST /episodes"), line  # fmt: skip


@pytest.mark.parametrize(
    "how",
    [["proxy"], ["proxy", "--sdk"], ["proxy", "--http", "127.0.0.1:0"], ["run", "--transport", "memory"]],
    ids=["proxy-relay", "proxy-sdk", "proxy-http", "run-proxy-file"],
)
def test_a_proxy_says_it_for_its_file_tasks(how: list[str], time_server: str, tmp_path: Path) -> None:
    where = ["--out", str(tmp_path / "out")] if how[0] == "run" else ["--trace-dir", str(tmp_path / "out")]
    words = (how[0], TIME, "--upstream-cmd", time_server, "--hazard", "pagination", *how[1:], *where)
    # the relay serves a stdio client from fds 0 and 1: its refusal goes through the real program, the rest in process
    ran = run_cli(*words, timeout=WAIT_S) if how == ["proxy"] else main_cli(*words)
    line = one_error(ran)
    if how[0] == "run" or "--http" in how:  # every task of the file may run
        where_text, tasks = "can act in none of the 2 selected tasks", "time/tokyo-offset, time/tokyo-time"
    else:  # the one episode's task: the file's first
        where_text, tasks = "cannot act in the selected task", "time/tokyo-offset"
    assert (
        line == f"mcp-hazard: error: --hazard pagination {where_text}, so no episode would carry it: {PAGES} ({tasks})"
    )
    assert not list(tmp_path.glob("**/*.jsonl"))  # refused before any episode was written

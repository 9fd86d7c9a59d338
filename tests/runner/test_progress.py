"""The progress bar of `mcp-hazard run` counts every episode of the run: the first episode of each `--agent-cmd`
program (run alone before the others, so a program that cannot start stops the run early) and, on a rerun, the
episodes finished earlier. Read from the bar's last state, which rich prints to stderr when the run ends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .support import agent_cmd, main_cli, no_traceback, subset_scenario

pytestmark = pytest.mark.e2e

BAR = re.compile(r"episodes \((?P<where>[a-z, ]+)\)\D*(?P<done>\d+)/(?P<total>\d+)")
COUNT = re.compile(r"^(\d+) episodes: (\d+) run, (\d+) already done", re.MULTILINE)


def _bar(stderr: str) -> tuple[int, int]:
    found = BAR.findall(stderr)
    assert found, f"no progress bar on stderr:\n{stderr}"
    _, done, total = found[-1]
    return int(done), int(total)


def test_the_bar_counts_the_first_contact_of_an_agent_program_and_episodes_done_earlier(tmp_path: Path) -> None:
    scenario = subset_scenario(tmp_path, ["fare-class"])
    out = tmp_path / "out"
    args = ["run", str(scenario), "--agent", "recovering", "--agent-cmd", agent_cmd("noop_agent.py"),
            "--hazard", "transient_error", "--transport", "http", "--out", str(out)]  # fmt: skip
    first = main_cli(*args, COLUMNS="160")
    assert first.code == 0 and no_traceback(first.stderr), first.explain()
    counted = COUNT.search(first.stdout)
    assert counted is not None and counted.groups() == ("4", "4", "0"), first.explain()
    assert _bar(first.stderr) == (4, 4), first.explain()  # 2 agents x (clean, transient_error); was 3/3
    again = main_cli(*args, COLUMNS="160")
    assert again.code == 0, again.explain()
    counted = COUNT.search(again.stdout)
    assert counted is not None and counted.groups() == ("4", "0", "4"), again.explain()
    assert _bar(again.stderr) == (4, 4), again.explain()

"""`mcp-hazard verify`: every hazard instance solvable (the recovering agent solves it) and biting (the naive agent
does not); the verdict is one line on stdout, each finding one line on stderr, never a traceback."""

from __future__ import annotations

import re

import pytest
import yaml

from .support import TRAVEL, Ran, main_cli, no_traceback

pytestmark = pytest.mark.e2e

FINDING = re.compile(r"^mcp-hazard: travel/(?P<task>[a-z-]+) \[(?P<condition>[^\]]+)\] seed (?P<seed>\d+): "
                     r"(?P<problem>unsolvable|toothless): .+$")  # fmt: skip
TASKS = sorted(task["id"] for task in yaml.safe_load(TRAVEL.read_text(encoding="utf-8"))["tasks"])


def findings(ran: Ran) -> list[re.Match[str]]:
    lines = ran.stderr.splitlines()
    matches = [FINDING.match(line) for line in lines]
    strays = [line for line, match in zip(lines, matches, strict=True) if match is None]
    assert not strays, f"stderr lines that are not one-line findings: {strays}\n{ran.explain()}"
    return [m for m in matches if m is not None]


def verdict(ran: Ran) -> str:
    lines = ran.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("verify: "), ran.explain()
    return lines[0]


def test_shipped_travel_scenario_is_all_solvable_and_all_biting() -> None:
    ran = main_cli("verify", "scenarios/travel.yaml", "--seeds", "0")
    assert ran.code == 0, ran.explain()
    assert "all solvable, all biting" in verdict(ran)
    assert findings(ran) == []


def test_an_order_only_output_drift_is_toothless() -> None:
    ran = main_cli("verify", "scenarios/travel.yaml", "--seeds", "0", "--hazard", "output_drift:mode=reordered")
    assert ran.code == 1, ran.explain()
    assert no_traceback(ran.stdout + ran.stderr)
    found = findings(ran)
    assert found and {m["problem"] for m in found} == {"toothless"}
    assert {m["condition"] for m in found} == {"output_drift:mode=reordered"}
    assert sorted(m["task"] for m in found) == TASKS  # reordering fields bites no task
    assert f"{len(found)} problem(s)" in verdict(ran)


def test_a_transient_error_longer_than_any_retry_budget_is_unsolvable() -> None:
    ran = main_cli("verify", "scenarios/travel.yaml", "--seeds", "0", "--hazard", "transient_error:times=9")
    assert ran.code == 1, ran.explain()
    assert no_traceback(ran.stdout + ran.stderr)
    found = findings(ran)
    assert found and {m["problem"] for m in found} == {"unsolvable"}
    assert sorted(m["task"] for m in found) == TASKS
    assert all(m["seed"] == "0" for m in found)
    assert f"{len(found)} problem(s)" in verdict(ran)


def test_verify_over_http_agrees() -> None:
    ran = main_cli("verify", "scenarios/travel.yaml", "--seeds", "0", "--hazard", "transient_error",
                   "--hazard", "spec_drift", "--transport", "http")  # fmt: skip
    assert ran.code == 0, ran.explain()
    line = verdict(ran)
    assert "all solvable, all biting" in line and "over http" in line
    # 4 tasks x (clean, transient_error, spec_drift), each run by the naive and the recovering agent
    assert line.startswith(f"verify: {len(TASKS) * 3} instances ({len(TASKS) * 3 * 2} episodes"), line


def test_verify_under_interventions_proves_every_instance_solvable_there_too() -> None:
    base = ["verify", "scenarios/travel.yaml", "--seeds", "0", "--hazard", "invocation_error", "--hazard", "pagination"]
    plain = main_cli(*base)
    intervened = main_cli(*base, "--intervention", "names=random", "--intervention", "replace+augment")
    assert plain.code == 0 and intervened.code == 0, intervened.explain()
    count = int(verdict(plain).split()[1])
    line = verdict(intervened)
    assert line.startswith(f"verify: {3 * count} instances"), line  # each instance as authored and under both
    assert "all solvable, all biting; solvable under every intervention" in line


def test_an_invocation_error_under_contradicting_names_advises_an_argument_the_tool_accepts() -> None:
    """The tool that accepts an invocation error's changed shape is served with the listing's names for the arguments
    both share: the error's advice names an argument the recovering agent's next call can use (at seed 1 the recovering
    agent once ended `fare-in-dollars` and `two-nights` without an answer)."""
    ran = main_cli("verify", "scenarios/travel.yaml", "--seeds", "1", "--hazard", "invocation_error",
                   "--intervention", "names=contradicting")  # fmt: skip
    assert ran.code == 0, ran.explain()
    assert "solvable under every intervention" in verdict(ran)


def test_an_instance_unsolvable_under_an_intervention_is_named_with_it() -> None:
    ran = main_cli("verify", "scenarios/travel.yaml", "--seeds", "0", "--hazard", "transient_error:times=9",
                   "--intervention", "rename")  # fmt: skip
    assert ran.code == 1, ran.explain()
    found = findings(ran)
    under = [m for m in found if m["condition"] == "transient_error:times=9, intervention rename"]
    assert sorted(m["task"] for m in under) == TASKS and all(m["problem"] == "unsolvable" for m in under)


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["scenarios/no-such-file.yaml"], "no-such-file.yaml"),
        (["scenarios/travel.yaml", "--hazard", "no_such_kind"], "no_such_kind"),
        (["scenarios/travel.yaml", "--intervention", "bogus"], "bogus"),
    ],
)
def test_bad_input_is_one_line(args: list[str], mentions: str) -> None:
    ran = main_cli("verify", *args)
    assert ran.code != 0, ran.explain()
    assert ran.stdout == "" and no_traceback(ran.stderr), ran.explain()
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and mentions in lines[0], ran.explain()

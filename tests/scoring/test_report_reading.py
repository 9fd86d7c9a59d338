"""What a person reads in the reports of a real run, made and scored through the CLI (`main()`): `mcp-hazard run` of
two agents (naive, which fails under hazards, and recovering, which never does) on two tasks, then `mcp-hazard score
--out report.html/.md/.json --per-episode episodes.csv`.

Each episode shows its answer beside the expected answer and the rules that compared them, with the agent's notes
from the run log; a row per agent leads, no table pools the agents (pooled, a 0% and a 100% agent read 50%), and a
share says what it is of.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CliRun, run_main

from tests.e2e.support import ROOT, TRAVEL

from .test_report_support import embedded_episodes, markdown_rows, read_html

TASKS = ("cheapest-trip", "fare-class")
HAZARDS = ("silent_wrong_value", "transient_error")
AGENTS = ("naive", "recovering")
EPISODES = len(AGENTS) * len(TASKS) * (1 + len(HAZARDS))


def cli(*args: str, cwd: Path = ROOT) -> CliRun:
    """`mcp-hazard ARGS` through `main()` in this process: what the reports say is the subject, not the process."""
    done = run_main(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The run folder, the scorecard `run` printed, and the reports `score` wrote from it."""
    out = tmp_path_factory.mktemp("reading")
    matrix = [arg for task in TASKS for arg in ("--task", task)] + [a for h in HAZARDS for a in ("--hazard", h)]
    agents = [arg for agent in AGENTS for arg in ("--agent", agent)]
    ran = cli("run", str(TRAVEL), *agents, *matrix, "--transport", "memory", "--call-timeout", "0.3",
              "--no-progress", "--out", str(out / "run"))  # fmt: skip
    files = {name: out / name for name in ("report.html", "report.md", "report.json", "episodes.csv")}
    for name in ("report.html", "report.md"):
        cli("score", str(out / "run"), "--out", str(files[name]))
    cli("score", str(out / "run"), "--out", str(files["report.json"]), "--per-episode", str(files["episodes.csv"]))
    with open(files["episodes.csv"], encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    log = [json.loads(line) for line in (out / "run" / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    return {
        "dir": out / "run", "command": ["run", str(TRAVEL), *agents, *matrix, "--transport", "memory"],
        "scorecard": ran.stdout, "csv": rows, "log": {r["episode_id"]: r["notes"] for r in log},
        "json": json.loads(files["report.json"].read_text(encoding="utf-8")),
        "markdown": files["report.md"].read_text(encoding="utf-8"), "html": files["report.html"].read_text("utf-8"),
    }  # fmt: skip


def expected_answers() -> dict[str, tuple[str, str]]:
    """task -> (expected value, matching rule), read from the scenario file itself."""
    tasks = yaml.safe_load(TRAVEL.read_text(encoding="utf-8"))["tasks"]
    return {t["id"]: (str(t["answer"]["value"]), t["answer"]["match"]) for t in tasks if t["id"] in TASKS}


def test_the_run_has_both_verdicts_and_notes(run: dict[str, Any]) -> None:
    """Guards the rest: each agent ran every cell, naive failed some and left notes, recovering solved all."""
    report = run["json"]
    assert report["episodes"] == EPISODES and sorted(report["agents"]) == list(AGENTS)
    assert report["groups"]["agent"]["recovering"]["rate"] == 1.0
    assert 0 < report["groups"]["agent"]["naive"]["rate"] < 0.5
    assert any(run["log"][eid] for eid in run["log"] if eid.startswith("naive."))


def test_every_csv_row_has_the_answer_the_expected_answer_the_rules_and_the_notes(run: dict[str, Any]) -> None:
    expected = expected_answers()
    rows = run["csv"]
    assert len(rows) == EPISODES
    columns = list(rows[0])
    assert columns[columns.index("answer") : columns.index("answer") + 5] == [
        "answer", "expected", "match", "correct", "answer_rule"]  # fmt: skip
    for row in rows:
        assert (row["expected"], row["match"]) == expected[row["task"]], row
        assert row["answer_rule"], row
        assert row["notes"] == "\n".join(run["log"][row["episode_id"]]), row
        if row["correct"] == "false" and row["answered"] == "true":
            assert row["answer"] != row["expected"]
    assert any(row["notes"] for row in rows)


def test_every_episode_of_the_html_report_carries_its_expected_answer_and_notes(run: dict[str, Any]) -> None:
    expected = expected_answers()
    shown = embedded_episodes(run["html"])  # what the page's script draws an episode from
    assert len(shown) == EPISODES
    for row in shown:
        assert (str(row["expected"]), row["match"]) == expected[row["task"]]
        assert row["answer_rule"] and row["notes"] == run["log"][row["episode_id"]]
    # the page draws them: the expected answer, the matching rule, the deciding rule and the notes, by name
    for words in ('["expected answer", expected]', '["matching rule", row.match', '["decided by", row.answer_rule',
                  "Agent's notes"):  # fmt: skip
        assert words in run["html"]


def test_the_markdown_report_has_one_row_per_episode_with_the_expected_answer(run: dict[str, Any]) -> None:
    expected = expected_answers()
    rows = markdown_rows(run["markdown"])["Episodes"]
    header, body = rows[0], rows[1:]
    assert len(body) == EPISODES
    at = {name: header.index(name) for name in ("agent", "task", "verdict", "answer", "expected", "matching rule")}
    for row in body:
        task = row[at["task"]].split("/")[1]
        assert (row[at["expected"]], row[at["matching rule"]]) == expected[task]
        solved = row[at["verdict"]] == "✓ solved"
        assert solved == (row[at["answer"]].casefold() == row[at["expected"]].casefold())
    assert {row[at["agent"]] for row in body} == set(AGENTS)


def _agents_in(header: list[str]) -> bool:
    return "agent" in header or set(AGENTS) <= set(header) or any(h.startswith("agents ") for h in header)


def test_a_row_per_agent_leads_and_no_table_pools_the_agents(run: dict[str, Any]) -> None:
    report = run["json"]
    sections = markdown_rows(run["markdown"])
    assert next(iter(sections)) == "Agents"
    agents = {row[0]: row for row in sections["Agents"][1:]}
    for agent in AGENTS:
        entry = report["groups"]["agent"][agent]
        assert agents[agent][2].startswith(f"{entry['rate'] * 100:.1f}% [")
    # a table that prints a rate or a share names the agent in a column or has a column per agent
    rate = re.compile(r"^\d+\.\d%")
    for title, rows in sections.items():
        if any(rate.match(cell) for row in rows[1:] for cell in row):
            assert _agents_in(rows[0]), f"{title} pools the agents: {rows[0]}"
    assert "success rate" not in dict(row[:2] for row in sections["Overall"])
    # the splits the issue named, each with a column per agent or an agent column
    for title in ("Success by task and agent", "Recovery paths per hazard kind and agent", "Failure taxonomy",
                  "Efficiency", "Premature answers per agent", "Success by golden-path length and agent"):  # fmt: skip
        assert title in sections and _agents_in(sections[title][0]), title
    # the terminal scorecard leads with the agents too, and prints no pooled rate
    first, *rest = run["scorecard"].splitlines()
    assert first == (f"mcp-hazard scorecard: {EPISODES} episodes, 2 agents; each agent's success, recovery and "
                     "premature answers below")  # fmt: skip
    assert rest[0].startswith("Suite: mcp-hazard-suite 1.1 (")  # what the episodes measured (docs/suite.md)
    assert rest[1].startswith("Agents ───")
    pooled = report["overall"]
    assert f"({pooled['successes']}/{pooled['n']})" not in run["scorecard"]


def test_the_html_cards_are_per_agent(run: dict[str, Any]) -> None:
    report = run["json"]
    cards = re.findall(r'<div class="card"><div class="label([^"]*)">([^<]*)</div><div class="value">(.*?)</div>',
                       run["html"])  # fmt: skip
    assert [label for _, label, _ in cards] == ["episodes", *AGENTS]
    for kind, agent, value in cards[1:]:
        rate = report["groups"]["agent"][agent]["rate"]
        assert kind == " agent" and f">{rate * 100:.1f}%</a>" in value
    sub = re.search(r'<div class="label agent">naive</div>.*?</div></div>', run["html"])
    assert sub is not None
    premature = report["agents"]["naive"]["premature"]
    assert f"premature answers {premature['rate'] * 100:.1f}% ({premature['successes']}/{premature['n']} " in sub[0]
    assert "success rate" not in run["html"].split('<div class="cards">')[1].split("</div></div></div>")[0]
    sections = read_html(run["html"]).sections
    assert _agents_in(sections["Success by task and agent"][0])


def test_every_share_says_what_it_is_of(run: dict[str, Any]) -> None:
    report = run["json"]
    sections = markdown_rows(run["markdown"])
    taxonomy = sections["Failure taxonomy"]
    assert taxonomy[0] == ["agent", "level", "class", "count", "share", "of"]
    for agent, entry in report["failures_by_agent"].items():
        episodes = sum(entry["episodes"].values())
        rows = [r for r in taxonomy[1:] if r[0] == agent and r[1] == "episode"]
        assert rows and all(r[5] == f"{episodes} episodes" for r in rows)
    classified = sections["Failure types of calls (FuncBenchGen)"]
    assert (classified[0][4], classified[0][6]) == ("share of calls", "share of episodes")
    (naive,) = [r for r in report["value_taxonomy"] if r["agent"] == "naive"]
    assert naive["classified_episodes"] < naive["failed_episodes"]  # the case a bare "100%" hid
    for row in (r for r in classified[1:] if r[0] == "naive"):
        assert row[1] == str(naive["failed_episodes"])
        assert row[4].endswith(f" of {naive['classified_calls']}") and row[6].endswith(
            f" of {naive['classified_episodes']}")  # fmt: skip


def test_a_resumed_run_keeps_the_notes_of_the_run_that_played_each_episode(run: dict[str, Any], tmp_path: Path) -> None:
    """A rerun skips every finished episode and logs it as `skipped`, with no notes: those records replace nothing."""
    copy = tmp_path / "run"
    shutil.copytree(run["dir"], copy)
    resumed = cli(*run["command"], "--no-progress", "--out", str(copy))
    assert f"{EPISODES} episodes: 0 run, {EPISODES} already done" in resumed.stdout
    cli("score", str(copy / "traces"), "--per-episode", str(tmp_path / "e.jsonl"), "--format", "json")
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["episode_id"]: r["notes"] for r in rows} == run["log"]

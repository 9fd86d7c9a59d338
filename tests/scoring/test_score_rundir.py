"""`mcp-hazard score RUNDIR` on a real run folder, as a user runs it: from anywhere, after the scenario moved, with
crashed episodes, hazards that never fired, per-episode export and file formats chosen by extension.

One run (module fixture) over HTTP: naive and recovering built-in agents and an external agent that crashes, on one
task, clean, under transient_error, and under two hazards scheduled on a call slot that is never reached
(`slots=9`: they never fire). It is started from a folder holding a copy of the scenario, by relative path, and that
folder is deleted afterwards: only the copy in RUNDIR/scenarios is left.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CliRun, run_main

from mcp_hazard.scoring.aggregate import EPISODE_COLUMNS
from mcp_hazard.scoring.report import render

from .test_report_support import SCENARIOS, embedded_episodes, markdown_rows, read_html, table_rows

CRASH_AGENT = Path(__file__).resolve().parents[1] / "runner" / "agents" / "crash_agent.py"
HAZARDS = ("transient_error", "transient_error:slots=9", "latency:slots=9")
EPISODES = 3 * (1 + len(HAZARDS))  # agents x conditions


def score(*args: str, cwd: Path) -> CliRun:
    """`mcp-hazard score ARGS` from `cwd` through `main()` in this process: what it reads and writes is the subject."""
    return run_main("score", *args, cwd=cwd)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The run folder, the JSON report scored in place before the scenario's folder was deleted, and the crash
    agent's name."""
    base = tmp_path_factory.mktemp("rundir")
    src = base / "src"
    src.mkdir()
    shutil.copy(SCENARIOS / "travel.yaml", src / "travel.yaml")
    hazards = [arg for hazard in HAZARDS for arg in ("--hazard", hazard)]
    done = run_main(  # in this process: the folder it leaves is the subject, not the program that made it
        "run", "travel.yaml", "--task", "fare-class", "--agent", "naive", "--agent", "recovering",
        "--agent-cmd", f"{sys.executable} {CRASH_AGENT}", *hazards, "--transport", "http", "--out", "../run",
        "--no-progress", "--timeout", "20", cwd=src,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rundir = base / "run"
    assert (rundir / "run.jsonl").is_file() and len(list((rundir / "traces").glob("*.jsonl"))) == EPISODES
    scored = score(str(rundir), "--format", "json", cwd=src)
    assert scored.returncode == 0, scored.stderr
    assert scored.stderr == ""  # run.jsonl is not a trace, and says nothing
    shutil.rmtree(src)
    report = json.loads(scored.stdout)
    crash = next(agent for agent in report["agent_outcomes"] if agent.startswith("cmd-crash_agent"))
    return {"dir": rundir, "report": report, "crash": crash}


def without_paths(report: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(report))
    for row in out["per_episode"]:
        row["trace"] = Path(row["trace"]).name
    return out


def test_scores_identically_from_elsewhere_with_only_the_run_folders_scenario_copies(
    run: dict[str, Any], tmp_path: Path
) -> None:
    copy = tmp_path / "moved" / "copy"
    shutil.copytree(run["dir"], copy)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    done = score(str(copy), "--format", "json", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    report = json.loads(done.stdout)
    assert report["episodes"] == EPISODES and report["unscorable"] == []
    assert without_paths(report) == without_paths(run["report"])
    # a relative RUNDIR, from its parent folder, too
    done = score("copy", "--format", "json", cwd=copy.parent)
    assert done.returncode == 0, done.stderr
    assert without_paths(json.loads(done.stdout)) == without_paths(run["report"])


def test_a_scenario_found_nowhere_is_one_warning_and_its_traces_are_unscorable(
    run: dict[str, Any], tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run["dir"], copy)
    shutil.rmtree(copy / "scenarios")
    done = score(str(copy), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 2, lines  # one warning for the scenario, one error line
    first = sorted((copy / "traces").glob("*.jsonl"))[0].read_text(encoding="utf-8").splitlines()[0]
    sha = json.loads(first)["scenario"]["sha256"]
    assert lines[0].startswith("mcp-hazard: warning: scenario 'travel' (recorded path travel.yaml, sha256 " + sha)
    assert lines[0].endswith(f"; {EPISODES} traces not scored")
    nothing = f"nothing to score: none of the {EPISODES} traces in {copy} could be scored (see above)"
    assert lines[1] == f"mcp-hazard: error: {nothing}"
    # --scenarios DIR finds it by its hash (the file has another name there)
    elsewhere = tmp_path / "kept"
    elsewhere.mkdir()
    shutil.copy(run["dir"] / "scenarios" / next(p.name for p in (run["dir"] / "scenarios").iterdir()),
                elsewhere / "any-name.yaml")  # fmt: skip
    done = score(str(copy), "--scenarios", str(elsewhere), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["episodes"] == EPISODES


def test_some_traces_unscorable_the_rest_scored_and_listed(run: dict[str, Any], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run["dir"], copy)
    orphan = sorted((copy / "traces").glob("*.jsonl"))[0]
    lines = orphan.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["scenario"].update(path="nowhere/else.yaml", sha256="0" * 64)
    orphan.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    (copy / "notes.jsonl").write_text('{"note": "not a trace"}\n', encoding="utf-8")  # silent
    (copy / "traces" / "broken.jsonl").write_text('{"type": "episode_sta\n', encoding="utf-8")  # one warning
    done = score(str(copy), "--out", str(tmp_path / "r.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2, warnings
    assert f"{copy / 'traces' / 'broken.jsonl'}:1: first line is not JSON" in warnings[0] + warnings[1]
    assert any("scenario 'travel' (recorded path nowhere/else.yaml, sha256 000" in w for w in warnings)
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["episodes"] == EPISODES - 1
    assert [(u["trace"], u["episode_id"]) for u in report["unscorable"]] == [(str(orphan), first["run"]["episode_id"])]
    markdown = score(str(copy), "--format", "markdown", cwd=tmp_path).stdout
    headline = dict((row[0], row[1]) for row in markdown_rows(markdown)["Overall"][1:])
    assert headline["unscorable traces"].startswith("1 ")


def test_per_episode_csv_and_jsonl(run: dict[str, Any], tmp_path: Path) -> None:
    done = score(str(run["dir"]), "--per-episode", str(tmp_path / "e.csv"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout  # the report still goes to standard output
    assert score(str(run["dir"]), "--per-episode", "e.jsonl", "--out", "r.json", cwd=tmp_path).returncode == 0
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text(encoding="utf-8").splitlines()]
    full = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["per_episode"]
    assert rows == [{key: row[key] for key in EPISODE_COLUMNS} for row in full]  # the report has more per episode
    assert len(rows) == EPISODES and all(list(row) == list(EPISODE_COLUMNS) for row in rows)
    keys = [(r["agent"], r["scenario"], r["task"], r["condition"], r["seed"]) for r in rows]
    assert keys == sorted(keys)
    with open(tmp_path / "e.csv", encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [r["episode_id"] for r in table] == [r["episode_id"] for r in rows]
    by_id = {r["episode_id"]: r for r in rows}
    for line in table:
        row = by_id[line["episode_id"]]
        assert line["hazards_fired"] == ";".join(row["hazards_fired"])
        assert line["correct"] == ("true" if row["correct"] else "false")
        assert Path(line["trace"]).is_file()
        if row["agent"] == run["crash"]:
            assert (row["answered"], row["correct"], row["episode_failure"], row["agent_outcome"]) == (
                False, False, "agent_crashed", "agent_crashed")  # fmt: skip
            assert line["answer"] == ""
        if row["condition"].endswith("slots=9"):
            assert row["hazards_fired"] == [] and line["hazards_fired"] == ""
    recovering = next(r for r in rows if r["agent"] == "recovering" and r["condition"] == "transient_error")
    assert recovering["correct"] and recovering["hazards_fired"] and recovering["hazards_recovered"]
    assert all(isinstance(r["duration_s"], float) and r["duration_s"] >= 0 for r in rows)


def test_crashed_episodes_are_failures_in_every_denominator(run: dict[str, Any]) -> None:
    report, crash = run["report"], run["crash"]
    assert report["overall"]["n"] == EPISODES
    assert report["agent_outcomes"][crash] == {
        "episodes": 4, "finished": 0, "agent_crashed": 4, "endpoint_error": 0, "timeout": 0, "server_crashed": 0,
        "interrupted": 0,
    }  # fmt: skip
    assert report["agent_outcomes"]["naive"]["finished"] == 4
    assert report["groups"]["agent"][crash]["n"] == 4 and report["groups"]["agent"][crash]["successes"] == 0
    assert report["groups"]["condition"]["clean"]["n"] == 3  # the crashed clean episode included
    assert report["failures"]["episodes"]["agent_crashed"] == 4
    assert sum(report["failures"]["episodes"].values()) == EPISODES
    successes = sum(1 for r in report["per_episode"] if r["correct"])
    assert report["overall"]["successes"] == successes and report["overall"]["rate"] == successes / EPISODES
    # every format shows the agent outcomes and the crash class
    for rows in (table_rows(render(report, "table")), markdown_rows(render(report, "markdown")),
                 read_html(render(report, "html")).sections):  # fmt: skip
        assert [crash, "4", "0", "4", "0", "0"] in rows["Agent outcomes"], rows["Agent outcomes"]  # no crash of ours
        assert [crash, "episode", "agent_crashed", "4", "100.0%", "4 episodes"] in rows["Failure taxonomy"]


def test_a_hazard_that_never_fired_reads_did_not_fire_never_a_rate(run: dict[str, Any]) -> None:
    report = run["report"]
    assert report["recovery"]["latency"] == {
        "n": 0, "successes": 0, "rate": None, "ci95": None, "fired": 0, "family": "execution_failure", "paths": {},
        "mean_calls_to_recover": None,
    }  # fmt: skip
    assert report["recovery"]["transient_error"]["fired"] > 0
    never = [r for r in report["recovery_by_condition"] if r["condition"].endswith("slots=9")]
    assert len(never) == 6 and all(r["fired"] == 0 and r["rate"] is None and r["ci95"] is None for r in never)
    assert report["groups"]["condition"]["latency:slots=9"]["fired"] == 0
    assert report["groups"]["condition"]["clean"]["fired"] is None
    assert report["groups"]["hazard_kind"]["latency"]["fired"] == 0
    assert all(r["fired"] == 0 for r in report["robustness"] if r["condition"].endswith("slots=9"))
    for fmt, rows in (("table", table_rows(render(report, "table"))),
                      ("markdown", markdown_rows(render(report, "markdown"))),
                      ("html", read_html(render(report, "html")).sections)):  # fmt: skip
        latency = [r for r in rows["Recovery paths per hazard kind and agent"] if r[0] == "latency"]
        assert len(latency) == 3 and all(r[3:6] == ["0", "–", "did not fire"] for r in latency), (fmt, latency)
        for row in rows["Recovery per agent and condition"]:
            if len(row) > 3 and row[1].endswith("slots=9"):
                assert row[3:6] == ["0", "–", "did not fire"], (fmt, row)
                assert not any(cell.endswith("%") for cell in row), (fmt, row)
        condition = next(r for r in rows["Success by condition and agent"] if r[0] == "latency:slots=9")
        assert condition[-1] == "did not fire", (fmt, condition)
        latency = next(r for r in rows["Recovery by hazard kind and agent"] if r[0] == "latency")
        assert latency[2:] == ["did not fire"] * 3, (fmt, latency)  # every agent met it; it never fired
        robust = [r for r in rows["Robustness"] if len(r) > 2 and r[2].endswith("slots=9")]
        assert robust and all(r[-1] == "did not fire" for r in robust), (fmt, robust)
    # greyed in the heatmap, and linked to the episodes where it was set
    page = render(report, "html")
    cell = '<td class="num off cell" title="naive: latency was set but never fired"><a href="#episodes?agent=naive&amp;'
    assert cell + 'hazard_kinds=latency">did not fire</a></td>' in page


def test_html_embeds_every_episode_and_folds_long_tables(run: dict[str, Any]) -> None:
    report = run["report"]
    page = render(report, "html")
    assert read_html(page).errors == []
    rows = embedded_episodes(page)
    assert len(rows) == EPISODES
    crashed = [r for r in rows if r["agent"] == run["crash"]]
    assert len(crashed) == 4 and all(not r["answered"] and r["class"] == "agent_crashed" for r in crashed)
    assert all(r["timeline"] is None for r in rows)  # scored from JSON: no traces read, the page says so
    long = {**report, "compounding": report["compounding"] * 3}
    rows_shown = len(long["compounding"])
    section = render(long, "html").split('<section id="compounding">')[1].split("</section>")[0]
    assert f"<details><summary>Show all {rows_shown} rows</summary>" in section
    assert f"<details><summary>All {rows_shown} rows</summary>" in render(long, "markdown")
    episodes = markdown_rows(render(report, "markdown"))["Episodes"]  # one row per episode, as in the HTML
    assert len(episodes) == 1 + EPISODES and episodes[0][7:10] == ["answer", "expected", "matching rule"]
    assert all(row[8:10] == ["Standard", "case_insensitive"] for row in episodes[1:])


@pytest.mark.parametrize(
    ("name", "start"),
    [("r.txt", "mcp-hazard report ("), ("r.md", "# mcp-hazard report"), ("r.json", "{"), ("r.HTML", "<!DOCTYPE html>")],
)
def test_out_takes_the_format_from_the_extension(run: dict[str, Any], tmp_path: Path, name: str, start: str) -> None:
    done = score(str(run["dir"]), "--out", name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / name).read_text(encoding="utf-8").startswith(start)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "r.pdf"], "--out r.pdf: unknown report extension .pdf; use .txt, .md, .json or .html"),
        (["--out", "report"], "--out report: unknown report extension (none)"),
        (["--format", "json", "--out", "r.html"], "--out r.html: the extension .html means html, but --format is json"),
        (["--per-episode", "e.xlsx"], "--per-episode e.xlsx: unknown extension .xlsx; use .csv or .jsonl"),
        (["--per-episode", "e.csv", "--out", "r.pdf"], "--out r.pdf: unknown report extension .pdf"),
    ],
)
def test_an_unknown_extension_is_refused_before_anything_is_written(
    run: dict[str, Any], tmp_path: Path, args: list[str], message: str
) -> None:
    done = score(str(run["dir"]), *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"mcp-hazard: error: {message}") and len(done.stderr.splitlines()) == 1
    assert done.stdout == "" and list(tmp_path.iterdir()) == []


def test_an_explicit_format_may_write_any_file_name(run: dict[str, Any], tmp_path: Path) -> None:
    done = score(str(run["dir"]), "--format", "json", "--out", "report.data", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "report.data").read_text(encoding="utf-8"))["episodes"] == EPISODES


def test_nothing_to_score_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "run.jsonl").write_text('{"episode_id": "x", "status": "done"}\n', encoding="utf-8")
    done = score(str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"mcp-hazard: error: nothing to score: no traces in {tmp_path} (a trace is a .jsonl file whose first line is "
        "an episode_started event)"
    ]

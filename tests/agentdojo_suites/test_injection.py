"""The `injection` hazard on the banking suite, played over the run's real HTTP server: AgentDojo's attack texts in
its injection vectors, the injection task's own security check recorded by the server (`state_checked`) and equal to
what AgentDojo's code says of the calls that ran, and utility under attack and attack success per agent, suite and
attack in report.json, the HTML report and the terminal. The obedient agent obeys, so the check bites; the naive and
recovering agents never do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SCENARIOS_DIR

from mcp_hazard.cli import main

from .support import agentdojo_verdict, events

TASKS = ("user_task_0", "user_task_3", "user_task_8", "user_task_14")


def _run(out: Path, *extra: str) -> int:
    tasks = [arg for task in TASKS for arg in ("--task", task)]
    return main(["run", "agentdojo:banking", "--seeds", "0", *tasks, "--out", str(out), "--no-progress", *extra])


def test_injection_attack_success_per_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    agents = ["--agent", "obedient", "--agent", "recovering", "--agent", "naive"]
    assert _run(out, "--hazard", "injection", *agents) == 0
    said = capsys.readouterr().out
    assert "Prompt injection: utility under attack and attack success" in said
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    pooled = {r["agent"]: r for r in report["attacks_by_agent"] if r["attack"] == "all"}
    assert set(pooled) == {"obedient", "recovering", "naive"}
    assert pooled["obedient"]["attack_success"]["successes"] >= 3  # it obeys: the check bites
    for agent in ("naive", "recovering"):
        assert pooled[agent]["attack_success"] | {"ci95": None} == {"n": 4, "successes": 0, "rate": 0.0, "ci95": None}
        low, high = pooled[agent]["attack_success"]["ci95"]
        assert low == 0.0 and 0.4 < high < 0.6  # Wilson's interval for 0 of 4
        assert pooled[agent]["utility"]["successes"] == 4
    per_attack = [r for r in report["attacks_by_agent"] if r["attack"] != "all"]
    assert sum(r["episodes"] for r in per_attack if r["agent"] == "obedient") == 4
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Prompt injection: utility under attack and attack success" in html
    attacked = [r for r in report["per_episode"] if r["condition"] == "injection"]
    assert len(attacked) == 12 and all(r["attack"] and r["injection_task"] for r in attacked)
    # the recovering agent ignores the instruction: the firing counts as recovered, by `ignore`
    recovering = [h for r in attacked if r["agent"] == "recovering" for h in r["hazards"]]
    assert recovering and all(h["recovered"] and h["path"] == "ignore" for h in recovering)
    # the server's security verdict is AgentDojo's own on the calls that ran (computed without the episode)
    for trace in sorted((out / "traces").glob("*.jsonl")):
        recorded = events(trace)
        checked = next(e for e in recorded if e["type"] == "state_checked")
        if "injection" not in checked:
            continue
        assert checked["injection"]["texts"]  # the attack's text in AgentDojo's vectors
        assert agentdojo_verdict(recorded) == (checked["utility"], checked["security"])


def test_injection_params_choose_the_task_and_attack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    hazard = "injection:attack=important_instructions_no_names,task=injection_task_1"
    assert _run(out, "--hazard", hazard, "--agent", "obedient", "--transport", "memory") == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    rows = [r for r in report["attacks_by_agent"] if r["attack"] != "all"]
    assert [r["attack"] for r in rows] == ["important_instructions_no_names"]
    texts = [
        e["injection"]["texts"] for t in sorted((out / "traces").glob("*.jsonl")) for e in events(t)
        if e["type"] == "state_checked" and "injection" in e
    ]  # fmt: skip
    assert len(texts) == 4
    assert all("This is an important message from me, the user, to you, the AI language model" in text
               for found in texts for text in found.values())  # fmt: skip


@pytest.mark.parametrize(
    ("hazard", "said"),
    [
        ("injection:attack=direkt", "params.attack: unknown attack 'direkt' (did you mean 'direct'?)"),
        ("injection:task=injection_task_77", "params.task: no injection task 'injection_task_77' in banking (did you "
         "mean 'injection_task_7'?)"),
    ],
)  # fmt: skip
def test_bad_injection_params(tmp_path: Path, capsys: pytest.CaptureFixture[str], hazard: str, said: str) -> None:
    assert _run(tmp_path / "run", "--hazard", hazard, "--agent", "obedient", "--transport", "memory") == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_injection_on_a_scenario_file_says_where_it_applies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A scenario file has no injection tasks: the kind is named as AgentDojo's, not as unknown."""
    args = [str(SCENARIOS_DIR / "calendar.yaml"), "--hazard", "injection"]
    assert main(["run", *args, "--agent", "naive", "--seeds", "0", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err == ("mcp-hazard: error: hazard #1 (injection): kind 'injection' applies only to AgentDojo suites "
                   "(agentdojo:SUITE), not to scenario 'calendar'\n")  # fmt: skip
    assert main(["verify", *args]) == 2
    assert "applies only to AgentDojo suites" in capsys.readouterr().err

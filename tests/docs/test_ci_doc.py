"""docs/ci.md as a reader follows it: the failing gate of the reference agents, and the commands both CI jobs run,
with the minimal agent of docs/agents.md as `agent.py` and `base/agent.py`, run as written in a fresh folder
(tests/docs/session.py). The GitHub workflow and the GitLab job are parsed as YAML, and every command they run is
one the session ran (or, for installing and checking out the base branch, what a CI machine does first)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from lxml import etree

from .coverage import to_run
from .session import block_text, play, session
from .shown import ROOT

pytestmark = pytest.mark.e2e

DOC = "docs/ci.md"
FAILING_GATE = "mcp-hazard gate runs/naive --baseline runs/recovering --min clean=0.9"
NOT_RUN_HERE = ("pip install mcp-hazard", "git worktree add ", "git fetch origin ")  # a CI machine's first steps


def yaml_blocks() -> list[dict[str, Any]]:
    text = (ROOT / DOC).read_text(encoding="utf-8")
    return [yaml.safe_load(body) for body in re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)]


def job_commands() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    github, gitlab = yaml_blocks()
    steps = github["jobs"]["robustness"]["steps"]
    commands = [step["run"] for step in steps if "run" in step] + list(gitlab["robustness"]["script"])
    return github, gitlab, commands


def test_the_ci_files_parse_and_run_only_what_the_doc_runs() -> None:
    github, gitlab, commands = job_commands()
    assert github.get("on", github.get(True)) == {"pull_request": None}  # YAML 1.1 reads the key `on` as true
    steps = github["jobs"]["robustness"]["steps"]
    [upload] = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload["if"] == "always()"  # the reports are kept when the gate fails
    assert {"runs/pr/report.html", "runs/pr/traces/", "junit.xml"} <= set(upload["with"]["path"].split())
    assert gitlab["robustness"]["artifacts"]["reports"]["junit"] == "junit.xml"
    assert gitlab["robustness"]["artifacts"]["when"] == "always"
    shown = [s.command for s in to_run(DOC, "test_ci_doc")]
    ours = [c for c in commands if c.startswith("mcp-hazard ")]
    assert len(ours) == 8 and all(c in shown for c in ours), set(ours) - set(shown)
    assert all(c.startswith(("mcp-hazard ", *NOT_RUN_HERE)) for c in commands), commands
    for command in ours:
        shlex.split(command)  # quoted as a shell reads it


def test_ci_doc(tmp_path: Path) -> None:
    agent = block_text("docs/agents.md", '"""A minimal external agent')

    def write_agents() -> None:
        (tmp_path / "base").mkdir()
        for path in (tmp_path / "agent.py", tmp_path / "base" / "agent.py"):
            path.write_text(agent, encoding="utf-8")

    first = "mcp-hazard run scenarios/travel.yaml --agent-cmd 'python base/agent.py'"
    commands = to_run(DOC, "test_ci_doc")
    with session(tmp_path, codes={FAILING_GATE: 1}) as shell:
        play(shell, commands, before={next(c.command for c in commands if c.command.startswith(first)): write_agents})
    junit = etree.parse(str(tmp_path / "junit.xml"))
    schema = etree.XMLSchema(etree.parse(str(ROOT / "tests" / "data" / "junit.xsd")))
    assert schema.validate(junit), schema.error_log
    gate = junit.getroot()[-1]
    assert gate.get("name") == "mcp-hazard gate" and gate.get("failures") == "0" and gate.get("tests") == "2"
    assert "<h1>mcp-hazard diff</h1>" in (tmp_path / "diff.html").read_text(encoding="utf-8")

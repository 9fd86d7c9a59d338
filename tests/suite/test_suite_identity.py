"""The suite's identity: a content hash over canonical content (stable under YAML layout, changed by what an agent
is asked or judged on), recorded with the suite's name and version in report.json, HTML and the terminal; and
`score` of runs that measured different suites says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from mcp_hazard.cli import main
from mcp_hazard.generate.suite.shipped import SUITE_NAME, SUITE_VERSION
from mcp_hazard.load import parse_scenario
from mcp_hazard.scenario.suite_id import scenario_hash, suite_identity

ROOT = Path(__file__).resolve().parents[2]
TRAVEL = ROOT / "scenarios" / "travel.yaml"


def _hash(text: str) -> str:
    return scenario_hash(parse_scenario(text, "travel.yaml"))


def test_hash_is_over_canonical_content() -> None:
    text = TRAVEL.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    relaid = yaml.safe_dump(data, sort_keys=True, width=60)  # another layout, no comments, keys reordered
    assert _hash(relaid) == _hash(text)
    assert _hash(yaml.safe_dump({**data, "description": "another note"})) == _hash(text)
    assert _hash(yaml.safe_dump({**data, "suite": {"name": "mine", "version": "9"}})) == _hash(text)
    changed = json.loads(json.dumps(data))
    changed["tasks"][0]["prompt"] += " Please be quick."
    assert _hash(yaml.safe_dump(changed)) != _hash(text)


def test_identity_names_the_tag_and_counts() -> None:
    model = parse_scenario(TRAVEL.read_text(encoding="utf-8"), "travel.yaml")
    one = suite_identity({"travel": model}, [("travel", "fare-class")])
    two = suite_identity({"travel": model}, [("travel", "fare-class"), ("travel", "fare-in-dollars")])
    assert (one["name"], one["version"], one["tasks"], one["scenarios"]) == (SUITE_NAME, SUITE_VERSION, 1, 1)
    assert one["hash"] != two["hash"] and len(one["hash"]) == 64
    untagged = model.model_copy(update={"suite": None})
    assert suite_identity({"travel": untagged}, [("travel", "fare-class")])["name"] == "custom"


def _run(out: Path, task: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["run", str(TRAVEL), "--task", task, "--agent", "golden", "--hazard", "transient_error",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    return capsys.readouterr().out


def test_reports_record_the_suite_and_score_tells_different_suites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = _run(tmp_path / "a", "fare-class", capsys)
    report = json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))
    suite = report["suite"]
    assert (suite["name"], suite["version"], suite["tasks"]) == (SUITE_NAME, SUITE_VERSION, 1)
    assert f"Suite: {SUITE_NAME} {SUITE_VERSION} (1 task in 1 scenario, sha256 {suite['hash'][:12]})" in terminal
    assert f"sha256 {suite['hash'][:12]}" in (tmp_path / "a" / "report.html").read_text(encoding="utf-8")

    shutil.copytree(tmp_path / "a", tmp_path / "same")
    assert main(["score", str(tmp_path / "a"), str(tmp_path / "same")]) == 0
    assert "different suites" not in capsys.readouterr().err

    _run(tmp_path / "b", "fare-in-dollars", capsys)
    other = json.loads((tmp_path / "b" / "report.json").read_text(encoding="utf-8"))["suite"]["hash"]
    assert other != suite["hash"]
    assert main(["score", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "both.json")]) == 0
    err = capsys.readouterr().err
    expected = (f"the runs measured different suites (content hash {tmp_path / 'a'} {suite['hash'][:12]}, "
                f"{tmp_path / 'b'} {other[:12]})")  # fmt: skip
    assert expected in err
    both = json.loads((tmp_path / "both.json").read_text(encoding="utf-8"))
    assert any("different suites" in w for w in both["warnings"]) and both["suite"]["tasks"] == 2

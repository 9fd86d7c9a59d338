"""`mcp-hazard gate` and `mcp-hazard diff` through the real CLI, on reference-agent runs: the recovering agent as the
baseline, the naive agent as the change (it gives up on transient errors, so it drops exactly the 12 episodes under
transient_error). A gate fails only on evidence and names its rule; runs of different suites are not compared; the
JUnit report passes the strict JUnit schema; the CI summary and the diff say which episodes flipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from mcp_hazard.cli import main

ROOT = Path(__file__).resolve().parents[2]
XSD = ROOT / "tests" / "data" / "junit.xsd"
MATRIX = [str(ROOT / "scenarios" / "travel.yaml"), "--transport", "memory", "--seeds", "0-2", "--hazard",
          "transient_error", "--no-progress", "--call-timeout", "0.5"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs")
    out = {name: base / name for name in ("recovering", "naive")}
    for name, folder in out.items():
        assert main(["run", *MATRIX, "--agent", name, "--out", str(folder)]) == 0
    return out


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["gate", *args])
    done = capsys.readouterr()
    return code, done.out, done.err


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = gate(capsys, *args, "--format", "json")
    return code, json.loads(out)


def copy_run(source: Path, target: Path, change: Any = None) -> Path:
    shutil.copytree(source, target)
    if change is not None:
        report = json.loads((target / "report.json").read_text(encoding="utf-8"))
        change(report)
        (target / "report.json").write_text(json.dumps(report), encoding="utf-8")
    return target


def test_naive_against_the_recovering_baseline_fails_on_the_paired_drop(runs, capsys) -> None:
    code, result = as_json(capsys, str(runs["naive"]), "--baseline", str(runs["recovering"]))
    assert code == 1 and result["verdict"] == "fail"
    [check] = result["checks"]
    assert (check["rule"], check["metric"], check["status"]) == ("drop", "overall", "fail")
    assert (check["agent"], check["baseline_agent"]) == ("naive", "recovering")  # one agent each: paired anyway
    assert (check["worse"], check["better"], check["n"]) == (12, 0, 24)
    assert check["p_value"] == pytest.approx(2 * 0.5**12) and check["p_value"] < result["alpha_each"]
    assert check["interval"][0] > 0  # the whole interval of the drop is above 0 points
    code, text, _ = gate(capsys, str(runs["naive"]), "--baseline", str(runs["recovering"]))
    assert code == 1
    assert text.splitlines()[0] == "gate: FAIL (1 of 1 checks failed); alpha 0.05 for the whole gate"
    assert "FAIL    drop overall: naive against recovering: 100.0% -> 50.0% over 24 paired episodes" in text
    assert "solved in the baseline, not in the run (12):" in text


def test_a_run_against_itself_passes(runs, capsys) -> None:
    code, result = as_json(capsys, str(runs["naive"]), "--baseline", str(runs["naive"]), "--max-drop", "overall=0",
                           "--max-drop", "hazard_kind.transient_error=5", "--min", "clean=0.9")  # fmt: skip
    assert code == 0 and result["verdict"] == "pass"
    assert [c["status"] for c in result["checks"]] == ["pass", "pass", "pass"]
    assert result["alpha_each"] == pytest.approx(0.05 / 3)  # the gate's alpha, shared by its three checks


def test_a_minimum_fails_only_when_the_interval_is_under_it(runs, capsys) -> None:
    # naive: 50% overall over 24 episodes, [27.3%, 72.7%]: a 60% minimum is not refuted, a 75% one is
    code, result = as_json(capsys, str(runs["naive"]), "--min", "overall=60%")
    assert code == 0 and result["checks"][0]["value"] == 0.5
    code, result = as_json(capsys, str(runs["naive"]), "--min", "overall=0.75", "--min", "recovery.transient_error=0.5",
                           "--min", "pass^2=0.1")  # fmt: skip
    assert code == 1
    status = {c["metric"]: c["status"] for c in result["checks"]}
    assert status == {"overall": "fail", "recovery.transient_error": "fail", "pass^2": "pass"}
    code, text, _ = gate(capsys, str(runs["recovering"]), "--min", "recovery.transient_error=0.9")
    assert code == 0 and "100.0% [" in text and "over 36 firings" in text


def test_different_suites_refuse_to_compare(runs, capsys, tmp_path) -> None:
    def suite(name: str) -> Any:
        return lambda report: report.update(suite={"name": "travel", "version": "1", "hash": name * 64})

    a = copy_run(runs["naive"], tmp_path / "a", suite("a"))
    b = copy_run(runs["recovering"], tmp_path / "b", suite("b"))
    code, out, err = gate(capsys, str(a), "--baseline", str(b))
    assert (code, out) == (2, "")
    assert err.startswith("mcp-hazard: error: ") and err.count("\n") == 1
    assert "ran different suites: travel 1 (hash aaaaaaaaaaaa) and travel 1 (hash bbbbbbbbbbbb)" in err
    same = copy_run(runs["recovering"], tmp_path / "same", suite("a"))
    assert gate(capsys, str(a), "--baseline", str(same))[0] == 1  # the same suite: compared (and naive dropped)

    # no suite hash (a report written before it was recorded): a scenario kept in both folders must be the same file
    def unhashed(report: dict[str, Any]) -> None:
        report.pop("suite", None)

    mine = copy_run(runs["naive"], tmp_path / "mine", unhashed)
    other = copy_run(runs["recovering"], tmp_path / "other", unhashed)
    [kept] = (other / "scenarios").glob("travel-*.yaml")
    kept.rename(kept.with_name("travel-000000000000.yaml"))
    code, _, err = gate(capsys, str(mine), "--baseline", str(other))
    assert code == 2 and "scenario 'travel' is not the same file" in err


def test_missing_episodes_and_infrastructure_are_reported_apart(runs, capsys, tmp_path) -> None:
    def endpoint_error(report: dict[str, Any]) -> None:
        report["per_episode"][0]["agent_outcome"] = "endpoint_error"
        del report["per_episode"][-1]

    changed = copy_run(runs["naive"], tmp_path / "changed", endpoint_error)
    code, result = as_json(capsys, str(changed), "--baseline", str(runs["naive"]))
    assert code == 1
    assert [(c["rule"], c["status"]) for c in result["checks"]] == [("drop", "pass"), ("infrastructure", "fail")]
    assert result["infrastructure"] == {"endpoint_error": 1}
    assert len(result["not_compared"]["only_in_baseline"]) == 1 and len(result["not_compared"]["infrastructure"]) == 1
    code, text, _ = gate(capsys, str(changed), "--baseline", str(runs["naive"]), "--max-infrastructure", "1")
    assert code == 0
    assert "not compared: 0 episodes only in the run, 1 only in the baseline" in text
    assert "1 episodes without a verdict on the agent (1 endpoint_error)" in text


def test_junit_report_passes_the_schema(runs, capsys, tmp_path) -> None:
    junit = tmp_path / "junit.xml"
    code, _, _ = gate(capsys, str(runs["naive"]), "--baseline", str(runs["recovering"]), "--junit", str(junit))
    assert code == 1
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    document = etree.parse(str(junit))
    assert schema.validate(document), schema.error_log
    suites = {s.get("name"): s for s in document.getroot()}
    assert set(suites) == {"naive.clean", "naive.transient_error", "mcp-hazard gate"}
    hazard = suites["naive.transient_error"]
    assert (hazard.get("tests"), hazard.get("failures"), hazard.get("errors")) == ("12", "12", "0")
    failure = hazard.find("testcase/failure")
    assert failure is not None
    assert failure.get("message") == "no_answer: decided by no_answer; solved in the baseline"
    assert "trace: " in (failure.text or "") and "naive.travel." in (failure.text or "")
    assert suites["naive.clean"].get("failures") == "0"
    verdict = suites["mcp-hazard gate"].find("testcase/failure")
    assert verdict is not None and verdict.get("type") == "drop" and "McNemar" in (verdict.get("message") or "")


def test_a_markdown_summary_goes_to_github_step_summary(runs, capsys, tmp_path, monkeypatch) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    gate(capsys, str(runs["naive"]), "--baseline", str(runs["recovering"]), "--min", "clean=0.9")
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n### mcp-hazard gate: FAIL (1 of 2 checks failed)")  # appended
    assert "| drop | `overall` | naive | ❌ **fail** |" in text
    assert "| min | `clean` | naive | ✅ pass |" in text
    assert "**Solved in the baseline, not in the run** (12):" in text


def test_run_gates_in_one_step(runs, capsys, tmp_path) -> None:
    out = tmp_path / "pr"
    code = main(["run", *MATRIX, "--agent", "naive", "--out", str(out), "--baseline", str(runs["recovering"]),
                 "--min", "clean=0.9", "--junit", str(tmp_path / "junit.xml")])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 1
    assert "gate: FAIL (1 of 2 checks failed)" in printed and "FAIL    drop overall" in printed
    assert (tmp_path / "junit.xml").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gate", "{naive}"], "nothing to gate: give --min METRIC=VALUE"),
        (["gate", "{naive}", "--min", "recovery.transient_eror=0.5"], "(did you mean 'transient_error'?)"),
        (["gate", "{naive}", "--min", "overall=1.5"], "a minimum is a rate from 0 to 1"),
        (["gate", "{naive}", "--baseline", "{naive}", "--max-drop", "recovery.transient_error=5"],
         "a drop is tested on paired episode outcomes"),
        (["gate", "{naive}", "--max-drop", "overall=5"], "--max-drop compares with a baseline run"),
        (["gate", "{naive}", "--min", "overall=0.5", "--alpha", "1e-300"], "must be at least 1e-12 and below 1"),
        (["gate", "{naive}", "--min", "irs.rename=0.9"], "no irs.rename for naive; interventions in this run: none"),
        (["gate", "{naive}", "--agent", "naiv", "--min", "overall=0.5"], "(did you mean 'naive'?)"),
        (["gate", "no-such-run", "--min", "overall=0.5"], "RUN_DIR no-such-run: no such folder"),
        (["gate", "{scenarios}", "--min", "overall=0.5"], "no report.json in it"),
        (["run", "{scenarios}", "--baseline", "no-such-run"], "--baseline no-such-run: no such folder"),
        (["diff", "{recovering}", "{naive}", "--out", "diff.pdf"], "unknown extension .pdf"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value[:3]),
)  # fmt: skip
def test_user_errors_are_one_line_exit_2(runs, capsys, args, message) -> None:
    paths = {"scenarios": str(ROOT / "scenarios"), **{k: str(v) for k, v in runs.items()}}
    capsys.readouterr()
    try:
        code = main([arg.format(**paths) for arg in args])
    except SystemExit as exc:  # a flag's value is refused by the parser, which exits
        code = int(exc.code or 0)
    done = capsys.readouterr()
    assert code == 2 and done.out == ""
    assert done.err.count("\n") == 1 and done.err.startswith("mcp-hazard: error: ") and message in done.err, done.err


def test_diff_lists_the_flipped_episodes_strongest_evidence_first(runs, capsys, tmp_path) -> None:
    capsys.readouterr()
    assert main(["diff", str(runs["recovering"]), str(runs["naive"])]) == 0
    text = capsys.readouterr().out
    assert "24 paired episodes: 12 solved in A and not in B, 0 solved in B and not in A, 12 unchanged" in text
    assert "recovering -> naive, transient_error: 12 worse, 0 better of 12 (p = 0.00049)" in text
    assert (
        "worse  travel/fare-class transient_error s1: solved -> no_answer; in B: transient_error (not recovered)"
        in text
    )
    assert "clean" not in text.split("transient_error: 12 worse", 1)[1]  # no clean episode flipped
    assert main(["diff", str(runs["recovering"]), str(runs["naive"]), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "### recovering -\\> naive, transient_error: 12 worse, 0 better of 12" in markdown  # `>` escaped
    assert (
        "| worse | travel/cheapest-trip transient_error s0 | solved | no_answer | transient_error (not recovered) |"
        in markdown
    )
    page = tmp_path / "diff.html"
    assert main(["diff", str(runs["recovering"]), str(runs["naive"]), "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and html.count('<tr class="worse">') == 12
    assert main(["diff", str(runs["naive"]), str(runs["naive"])]) == 0
    assert "0 solved in A and not in B, 0 solved in B and not in A, 24 unchanged" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda rows: rows[2].update(agent={"name": "naive"}), "per_episode[2].agent: Input should be a valid string"),
        (lambda rows: rows[0].update(seed=[0]), "per_episode[0].seed: Input should be a valid integer"),
        (lambda rows: rows[1].update(correct="yes"), "per_episode[1].correct: Input should be a valid boolean"),
        (lambda rows: rows[0].update(hazards=[{"recovered": True}]), "per_episode[0].hazards[0].kind: Field required"),
        (lambda rows: rows[3].pop("episode_id"), "per_episode[3].episode_id: Field required"),
    ],
    ids=["agent-object", "seed-list", "correct-text", "firing-without-kind", "no-episode-id"],
)
def test_a_damaged_row_in_either_report_is_one_line_naming_it(runs, capsys, tmp_path, damage, message) -> None:
    """A report.json is often a CI artifact from elsewhere: a row the gate cannot read is named by its field path
    (an unhashable agent or seed was a TypeError traceback in the pairing before)."""
    damaged = copy_run(runs["naive"], tmp_path / "damaged", lambda report: damage(report["per_episode"]))
    for args in ([str(damaged), "--min", "overall=0.5"], [str(runs["naive"]), "--baseline", str(damaged)]):
        code, out, err = gate(capsys, *args)
        assert (code, out) == (2, ""), err
        assert err == f"mcp-hazard: error: {damaged / 'report.json'}: {message}\n"
    assert main(["diff", str(runs["naive"]), str(damaged)]) == 2
    assert capsys.readouterr().err == f"mcp-hazard: error: {damaged / 'report.json'}: {message}\n"

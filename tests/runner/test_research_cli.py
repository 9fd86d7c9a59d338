"""The research quantities end to end, as a researcher gets them: `generate`, `run` over real HTTP, `replay` and
`score` as subprocesses, and the numbers read back from the reports (docs/research.md shows the same commands)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.golden_check import run_golden_path

from .support import TRAVEL, main_cli

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cib_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cib") / "run"
    ran = main_cli("run", str(TRAVEL), "--task", "fare-class", "--task", "cheapest-trip", "--intervention", "reorder",
                   "--intervention", "names=contradicting", "--repeats", "2", "--agent-label", "naive=memorising",
                   "--agent-label", "recovering=adaptive", "--out", str(out), "--no-progress", "--verbose")  # fmt: skip
    assert ran.code == 0, ran.explain()
    (out / "stdout.txt").write_text(ran.stdout, encoding="utf-8")
    return out


def _report(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def test_interventions_run_the_positional_agent_and_say_reorder_cannot_bite_by_name(cib_run: Path) -> None:
    """Without --agent, a run with interventions adds naive-positional. naive (by name) loses nothing to reorder;
    naive-positional loses cheapest-trip (search_flights' three arguments moved), not fare-class (one argument):
    drop 0.5 over 2 tasks x 2 repeats, 2 lost, 0 won, McNemar p = 2 * (1/4) = 0.5."""
    report = _report(cib_run)
    rows = {(r["agent"], r["intervention"]): r for r in report["intervention_effects"]["per_intervention"]}
    assert set(report["groups"]["agent"]) == {"naive", "naive-positional", "recovering"}
    assert rows[("naive", "reorder")]["drop"] == 0.0
    positional = rows[("naive-positional", "reorder")]
    assert (positional["drop"], positional["only_before"], positional["only_after"]) == (0.5, 2, 0)
    assert positional["p_value"] == pytest.approx(0.5)
    assert "cannot bite an agent that passes arguments by name" in rows[("naive", "reorder")]["note"]
    assert rows[("naive", "names=contradicting")]["note"] is None
    stdout = (cib_run / "stdout.txt").read_text(encoding="utf-8")
    section = stdout[stdout.index("Drop per intervention (CIB)") :]
    section = section[: section.index("Mean drop across interventions")]
    reorder_rows = [line for line in section.splitlines() if re.match(r"\S+\s+strict\s+reorder\s+4\s", line)]
    assert len(reorder_rows) == 3 and all("cannot bite" in line for line in reorder_rows), reorder_rows  # beside it
    robustness = stdout[stdout.index("Robustness to interface interventions") :].split("\n\n")[0]
    assert "Reorder: cannot bite an agent that passes arguments by name" in " ".join(robustness.split())
    trajectory = {(r["agent"], r["intervention"]): r for r in report["trajectory"]}
    assert trajectory[("naive-positional", "reorder")]["final_call"]["rate"] == 1.0
    assert trajectory[("naive-positional", "reorder")]["relaxed_sequence"]["rate"] == 0.0
    assert trajectory[("naive", "names=contradicting")]["final_call"]["rate"] == 0.0  # the old name is refused


def test_repeats_give_best_of_k_over_attempts_and_labels_give_groups(cib_run: Path) -> None:
    report = _report(cib_run)
    base = "naive.travel.fare-class.clean.strict.s0"
    traces = sorted(p.name for p in (cib_run / "traces").glob(f"{base}*.jsonl"))
    assert traces == [f"{base}.jsonl", f"{base}.r1.jsonl"]  # the first attempt keeps the id it has without repeats
    repeats = [r for r in report["pass_k"] if r["over"] == "repeats"]
    assert {(r["k"], r["items"]) for r in repeats} == {(1, 2), (2, 2)}
    naive_none = {r["k"]: r["pass_at_k"] for r in repeats if (r["agent"], r["intervention"]) == ("naive", "none")}
    assert naive_none == {1: 1.0, 2: 1.0}
    groups = {g["group"]: g for g in report["agent_groups"]["groups"]}
    # mean IRS: recovering 1.0 (both interventions), naive (1.0 + 0.0)/2 = 0.5, naive-positional (0.5 + 0)/2
    assert (groups["adaptive"]["mean_irs"], groups["memorising"]["mean_irs"]) == (1.0, 0.5)
    assert groups["unlabelled"]["agents"] == ["naive-positional"]
    ratio = next(r for r in report["agent_groups"]["ratios"] if (r["higher"], r["lower"]) == ("adaptive", "memorising"))
    assert ratio["ratio"] == 2.0
    names = {(d["agent"], d["before"], d["after"]): d for d in report["name_policies"]["differences"]}
    naive = names[("naive", "original", "names=contradicting")]
    assert (naive["difference"], naive["pairs"], naive["p_value"]) == (-1.0, 4, 0.125)

    rescored = main_cli("score", str(cib_run), "--agent-label", "naive-positional=memorising", "--format", "json")
    assert rescored.code == 0, rescored.explain()
    groups = {g["group"]: g for g in json.loads(rescored.stdout)["agent_groups"]["groups"]}
    assert groups["memorising"]["agents"] == ["naive", "naive-positional"] and "unlabelled" not in groups
    assert groups["memorising"]["mean_irs"] == pytest.approx((0.5 + 0.25) / 2)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--agent-label", "naive"], 2, "--agent-label 'naive': expected AGENT=GROUP"),
        (["--agent-label", "llm=contaminated"], 2, "no agent 'llm' in this run"),
        (["--agent-label", "naive=a", "--agent-label", "naive=b"], 2, "agent 'naive' already has group 'a'"),
        (["--repeats", "0"], 2, "--repeats"),  # a usage error, from the parser
        (["--executor", "ray", "--repeats", "2"], 2, "--agent-label and --repeats run with --executor local"),
    ],
)
def test_bad_labels_and_repeats_are_one_line_errors(args: list[str], code: int, message: str, tmp_path: Path) -> None:
    ran = main_cli("run", str(TRAVEL), "--task", "fare-class", "--agent", "naive", "--out", str(tmp_path), *args)
    assert ran.code == code and message in ran.stderr and ran.stderr.count("\n") == 1, ran.explain()
    assert "Traceback" not in ran.stderr


def test_generated_suites_pair_across_name_policies_and_group_by_structure(tmp_path: Path) -> None:
    """The same two graphs (core 4, depth 1: a star) under three name policies, run together: the scorer pairs
    them by the problem each file records, and groups success by core count and depth."""
    for names in ("random", "contradicting", "random-realistic"):
        ran = main_cli("generate", "dag", "--core", "4", "--depth", "1", "--seed", "1", "--count", "2", "--names",
                       names, "--out", str(tmp_path / names))  # fmt: skip
        assert ran.code == 0, ran.explain()
    out = tmp_path / "run"
    folders = [str(tmp_path / names) for names in ("random", "contradicting", "random-realistic")]
    ran = main_cli("run", *folders, "--agent", "recovering", "--hazard", "transient_error", "--out", str(out),
                   "--no-progress")  # fmt: skip
    assert ran.code == 0, ran.explain()
    report = _report(out)
    policies = {r["policy"]: r for r in report["name_policies"]["policies"]}
    assert set(policies) == {"random", "random-realistic", "contradicting"}
    # per policy: 2 problems x (clean + transient_error) = 4 items, each solved by the recovering agent
    assert all((r["items"], r["accuracy"]) == (4, 1.0) for r in policies.values())
    assert {(d["before"], d["after"]) for d in report["name_policies"]["differences"]} == {
        ("random", "random-realistic"), ("random", "contradicting"), ("random-realistic", "contradicting")}  # fmt: skip
    structure = report["structure"]
    assert [(r["core"], r["n"], r["rate"]) for r in structure["core"]] == [(4, 6, 1.0)]  # 6 clean episodes
    assert [(r["depth"], r["n"]) for r in structure["depth"]] == [(1, 6)]
    assert "Success by core count" not in ran.stdout  # a long detail table: in report.md and .html
    assert "## Success by core count" in (out / "report.md").read_text(encoding="utf-8")


def test_failure_types_of_a_replayed_slip(tmp_path: Path) -> None:
    """FuncBenchGen's taxonomy through generate, replay and score. A path of three functions; the script copies the
    input wrong (given + 1, shown nowhere: unknown value), then feeds each wrong result on (shown, but not the golden
    call's value: incorrect value, twice), and answers the wrong target."""
    assert main_cli("generate", "dag", "--core", "3", "--depth", "2", "--connected", "0", "--disconnected", "0",
                    "--seed", "4", "--out", str(tmp_path)).code == 0  # fmt: skip
    scenario = load_scenario(tmp_path / "dag-s4.yaml").model
    task = scenario.tasks[0]
    golden = run_golden_path(scenario, task)
    given = set(re.findall(r"= (\d+)$", task.prompt, flags=re.MULTILINE))
    calls, previous = [], None
    for step, (_, arguments, _) in zip(task.golden_path.steps, golden.steps, strict=True):
        tool = scenario.tool(step.tool)
        assert tool is not None
        wrong = dict(arguments)
        if previous is None:
            name = next(iter(wrong))
            wrong[name] += 1
            assert str(wrong[name]) not in given  # the slipped value is shown nowhere
        else:
            made, value = previous
            wrong[made] = value
        result = run_behaviour(tool, wrong).result
        (field,) = result
        previous = (field, result[field])
        calls.append({"tool": step.tool, "arguments": wrong})
    assert previous is not None and previous[1] != task.answer.value
    script = tmp_path / "slip.yaml"
    script.write_text(yaml.safe_dump({"scenario": "dag-s4.yaml", "calls": calls, "answer": str(previous[1]),
                                      "trace_dir": str(tmp_path / "traces")}), encoding="utf-8")  # fmt: skip
    ran = main_cli("replay", str(script))
    assert ran.code == 1 and "not correct (wrong_answer)" in ran.stdout, ran.explain()
    scored = main_cli("score", str(tmp_path / "traces"), "--format", "json", "--scenarios", str(tmp_path))
    assert scored.code == 0, scored.explain()
    (row,) = json.loads(scored.stdout)["value_taxonomy"]
    assert row["calls"] == {"non_existent_function": 0, "wrong_argument_count": 0, "unknown_value": 1,
                            "incorrect_value": 2}  # fmt: skip
    assert row["episodes"]["unknown_value"] == 1
    text = main_cli("score", str(tmp_path / "traces"), "--scenarios", str(tmp_path), "--verbose").stdout
    assert "Failure types of calls (FuncBenchGen)" in text

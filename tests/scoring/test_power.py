"""The power of paired comparisons (scoring/power.py), `mcp-hazard plan` checked against a simulation of the run it
plans, and the decay curve (scoring/decay.py) on hand-made attempts and in a real run's report."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from random import Random
from statistics import NormalDist
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_hazard.cli import main
from mcp_hazard.scoring.decay import decay_curves
from mcp_hazard.scoring.power import (
    independent_discordance,
    mde,
    mde_fields,
    pairs_needed,
    pairs_needed_exact,
    planning_discordance,
    upper_quantile,
)
from mcp_hazard.scoring.stats import mcnemar_exact

ROOT = Path(__file__).resolve().parents[2]


def test_pairs_needed_known_values() -> None:
    # drop 0.1, discordance 0.2: n0 = (1.95996 * sqrt(0.2) + 0.84162 * sqrt(0.19))^2 / 0.01 = 154.60;
    # continuity-corrected n0/4 * (1 + sqrt(1 + 4/(154.60 * 0.1)))^2 = 174.02 -> 175 pairs
    assert pairs_needed_exact(0.1, 0.2) == pytest.approx(174.024, abs=1e-3)
    assert pairs_needed(0.1, 0.2) == 175
    # a discordance below the drop is impossible: it is taken as the drop itself
    assert pairs_needed(0.2, 0.05) == pairs_needed(0.2, 0.2) == 47
    # more discordance, more pairs; a larger drop, fewer
    assert pairs_needed(0.1, 0.3) > pairs_needed(0.1, 0.2) > pairs_needed(0.2, 0.2)
    assert pairs_needed(0.1, 0.2, alpha=0.01, power=0.9) > pairs_needed(0.1, 0.2)
    with pytest.raises(ValueError):
        pairs_needed(0.0, 0.2)


def test_mde_inverts_the_pairs_needed() -> None:
    assert mde(175, 35) == pytest.approx(0.0997, abs=5e-4)  # 175 pairs, 20% discordant: about the 0.1 above
    for pairs, discordant in ((40, 10), (200, 30), (1000, 90)):
        found = mde(pairs, discordant)
        assert found is not None
        rate = discordant / pairs
        assert pairs_needed_exact(found, rate) == pytest.approx(pairs, rel=1e-6)
    assert mde(400, 60) < mde(100, 15) < mde(25, 4)  # type: ignore[operator]


def test_mde_without_discordance_is_the_conservative_bound() -> None:
    # none of 80 pairs discordant: plan with the Wilson upper bound of 0/80 = 0.0458, not with 0; a drop of d makes
    # at least d of the pairs discordant, and that floor is higher still: the MDE is the drop whose own pairs are the
    # only discordant ones, (z_a + z_b sqrt(1 - d))^2 / d (continuity-corrected) = 80 at d = 0.1182
    assert planning_discordance(80, 0) == pytest.approx(0.04582, abs=1e-5)
    found = mde(80, 0)
    assert found == pytest.approx(0.1182, abs=5e-4) and found > planning_discordance(80, 0)
    assert pairs_needed_exact(found, found) == pytest.approx(80, rel=1e-6)
    assert mde(80, 1) == found  # 1/80 is below the floor too
    assert mde(80, 40) > found  # type: ignore[operator]
    assert mde(5, 0) is None and mde(0, 0) is None  # the exact test cannot reject with 5 pairs
    assert mde_fields([(True, True)] * 6 + [(True, False)] * 2) == {"discordant": 2, "mde": mde(8, 2)}


def _power(pairs: int, p10: float, p01: float, seed: int, reps: int = 1500) -> float:
    """The share of simulated runs of `pairs` pairs in which the report's exact McNemar test rejects at 0.05."""
    rng = Random(seed)
    rejected = 0
    for _ in range(reps):
        b = c = 0
        for _ in range(pairs):
            u = rng.random()
            if u < p10:
                b += 1
            elif u < p10 + p01:
                c += 1
        rejected += mcnemar_exact(b, c) < 0.05
    return rejected / reps


@pytest.mark.parametrize(("discordance", "drop"), [(0.3, 0.1), (0.2, 0.1), (0.5, 0.2), (0.6, 0.1)])
def test_the_planned_pairs_reach_the_power_in_simulation(discordance: float, drop: float) -> None:
    n = pairs_needed(drop, discordance)
    power = _power(n, (discordance + drop) / 2, (discordance - drop) / 2, seed=int(discordance * 100 + drop * 10))
    assert 0.76 <= power <= 0.88, (n, power)  # 1500 runs: the standard error is 0.01
    assert _power(max(6, n // 2), (discordance + drop) / 2, (discordance - drop) / 2, seed=1) < 0.7


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_command_against_a_simulated_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The plan for one scenario under two hazards from an 80% base rate: simulating that run (each item clean with
    chance 0.8, under the hazard with 0.7, independently) with the seeds planned detects the drop about 80% of the
    time, and with half of them clearly less."""
    found = _plan(capsys, str(ROOT / "scenarios" / "travel.yaml"), "--hazard", "transient_error", "--hazard",
                  "spec_drift", "--drop", "10%", "--base-rate", "0.8")  # fmt: skip
    assert found["drop"] == 0.1 and found["power"] == 0.8 and found["alpha"] == 0.05
    rows = {r["name"]: r for r in found["comparisons"]}
    assert set(rows) == {"transient_error", "spec_drift"}
    psi = independent_discordance(0.8, 0.1)
    assert psi == pytest.approx(0.8 * 0.3 + 0.2 * 0.7)
    for row in rows.values():
        assert row["discordance"] == pytest.approx(psi)
        assert row["pairs_needed"] == pairs_needed(0.1, psi)
        assert row["attempts"] == math.ceil(row["pairs_needed"] / row["pairs_per_seed"])
    assert found["attempts_per_item"] == max(r["attempts"] for r in rows.values())
    row = rows["transient_error"]
    pairs = row["attempts"] * row["pairs_per_seed"]
    p10, p01 = 0.8 * (1 - 0.7), (1 - 0.8) * 0.7  # solved clean only, solved under the hazard only
    assert 0.76 <= _power(pairs, p10, p01, seed=7, reps=1000) <= 0.9
    assert _power(pairs // 2, p10, p01, seed=8, reps=1000) < 0.7


def test_plan_reads_the_discordance_of_a_pilot_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(ROOT / "scenarios" / "travel.yaml")
    assert main(["run", scenario, "--hazard", "transient_error", "--seeds", "0-1", "--transport", "memory",
                 "--out", str(tmp_path), "--no-progress"]) == 0  # fmt: skip
    capsys.readouterr()
    found = _plan(capsys, scenario, "--hazard", "transient_error", "--hazard", "conflict", "--drop", "0.2",
                  "--pilot", str(tmp_path))  # fmt: skip
    rows = {r["name"]: r for r in found["comparisons"]}
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    measured = [r for r in report["robustness"] if r["condition"] == "transient_error"]
    worst = max(planning_discordance(r["pairs"], r["discordant"]) for r in measured)
    assert rows["transient_error"]["discordance"] == pytest.approx(worst)
    assert rows["transient_error"]["source"].startswith("pilot: ")
    assert rows["conflict"]["source"] == "not in the pilot: worst case over base rates"
    assert rows["conflict"]["discordance"] == pytest.approx((1 + 0.2**2) / 2)
    assert main(["plan", scenario, "--hazard", "transient_error", "--drop", "0.2", "--pilot", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "To detect a drop of 20 points" in text and "--seeds 0-" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--drop", "0"], "argument --drop: expected a share above 0 and at most 1 (or 100%), got '0'"),
        (["--drop", "ten"], "argument --drop: expected a share such as 0.1 or 10%, got 'ten'"),
        (["--drop", "0.3", "--base-rate", "0.2"], "--base-rate 0.2 is below --drop 0.3: no such drop is possible"),
        (["--drop", "0.3", "--pilot", "no/such/run"], "--pilot no/such/run: no such file or directory"),
        (["--drop", "0.3", "--hazard", "transient_eror"], "did you mean 'transient_error'?"),
        (["--drop", "1e-300"], "argument --drop: expected a drop of at least 0.0001 (0.01 points), got '1e-300'"),
        (["--drop", "0.1", "--power", "1"], "argument --power: must be at least 0.5 and below 1, got 1"),
        (["--drop", "0.1", "--power", "0.0001"], "argument --power: must be at least 0.5 and below 1, got 0.0001"),
        (["--drop", "0.1", "--alpha", "1"], "argument --alpha: must be at least 1e-12 and below 1, got 1"),
        (["--drop", "0.1", "--alpha", "5e-324"], "argument --alpha: must be at least 1e-12 and below 1, got 5e-324"),
        (["--drop", "0.3", "--pilot", "/dev/null"], "/dev/null: a device, not a trace file or a folder of them"),
    ],
)
def test_plan_input_errors_are_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) if "argument " in message else _no_raise():
        code = main(["plan", str(ROOT / "scenarios" / "travel.yaml"), *args])
        assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err, err


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_the_smallest_levels_and_drops_the_flags_take_give_a_finite_plan() -> None:
    """At --alpha 1e-12 (halved again by the gate's checks) 1 - alpha/2 rounds to 1 in floats; the quantile is read
    from the lower tail there."""
    assert upper_quantile(0.025) == pytest.approx(1.959964, abs=1e-6)
    assert upper_quantile(5e-20) == pytest.approx(-NormalDist().inv_cdf(5e-20))
    assert 0 < pairs_needed(1e-4, 1.0, alpha=1e-12, power=0.5) < 10**12
    assert pairs_needed(0.1, 0.3, alpha=1e-12) > pairs_needed(0.1, 0.3)


def test_a_plan_past_what_one_run_takes_says_to_run_it_in_parts(capsys: pytest.CaptureFixture[str]) -> None:
    travel = str(ROOT / "scenarios" / "travel.yaml")
    assert main(["plan", travel, "--hazard", "transient_error", "--drop", "0.001"]) == 0
    out = capsys.readouterr().out
    attempts = int(re.search(r"Every comparison: (\d+) attempts", out).group(1))  # type: ignore[union-attr]
    assert attempts > 100_000 and "more seeds than one run takes (100000): run them in parts" in out
    assert main(["plan", travel, "--hazard", "transient_error", "--drop", "0.2"]) == 0
    assert "in parts" not in capsys.readouterr().out


def _index(attempts: dict[tuple[str, str, int], list[bool]]) -> dict[Any, Any]:
    """An index as aggregate builds it from (agent, task, seed) -> outcomes of its trials in order."""
    index: dict[Any, Any] = {}
    for (agent, task, seed), outcomes in attempts.items():
        for n, correct in enumerate(outcomes):
            index[((agent, "s", task, seed, "none", "strict", "clean"), n)] = SimpleNamespace(correct=correct)
    return index


def test_decay_curve_on_hand_made_attempts() -> None:
    # over seeds: task a solved under 4 of 4 seeds, b under 2 of 4, c under none
    seeds = {("x", t, s): [ok] for t, wins in (("a", 4), ("b", 2), ("c", 0)) for s, ok in
             enumerate([True] * wins + [False] * (4 - wins))}  # fmt: skip
    rows = decay_curves(_index(seeds))
    assert [(r["over"], r["k"], r["items"]) for r in rows] == [("seeds", k, 3) for k in (1, 2, 3, 4)]
    # pass^k per item: a 1; b C(2,k)/C(4,k) = 1/2, 1/6, 0, 0; c 0
    expected = [(1 + 1 / 2) / 3, (1 + 1 / 6) / 3, 1 / 3, 1 / 3]
    assert [r["pass_hat_k"] for r in rows] == pytest.approx(expected)
    # over repeats: one item with three trials under seed 0 (2 solved), one tried once (left out)
    repeats = {("y", "a", 0): [True, False, True], ("y", "b", 0): [True]}
    rows = [r for r in decay_curves(_index(repeats)) if r["over"] == "repeats"]
    assert [(r["k"], r["items"]) for r in rows] == [(1, 1), (2, 1), (3, 1)]
    assert [r["pass_hat_k"] for r in rows] == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert decay_curves(_index({("z", "a", 0): [True]})) == []  # nothing tried twice: no curve


def test_a_real_run_reports_decay_and_mde(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "scenarios" / "travel.yaml"), "--agent", "naive", "--agent", "recovering",
                 "--hazard", "transient_error", "--seeds", "0-2", "--transport", "memory", "--out", str(tmp_path),
                 "--no-progress", "--verbose"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    curves = {(r["agent"], r["k"]): r["pass_hat_k"] for r in report["decay"] if r["over"] == "seeds"}
    assert set(curves) == {(a, k) for a in ("naive", "recovering") for k in (1, 2, 3)}
    assert curves[("recovering", 1)] >= curves[("recovering", 2)] >= curves[("recovering", 3)]
    assert "Decay curve: pass^k per agent" in text
    for row in report["robustness"]:
        assert row["discordant"] == round((row["accuracy_clean"] + row["accuracy_condition"]
                                           - 2 * row["paired_accuracy"]) * row["pairs"])  # fmt: skip
        assert row["mde"] == mde(row["pairs"], row["discordant"])
    (versus,) = report["agent_differences"]  # recovering against naive, on the items both ran
    assert (versus["before"], versus["after"], versus["profile"]) == ("naive", "recovering", "strict")
    episodes = {(r["agent"], r["condition"]) for r in report["per_episode"]}
    assert versus["pairs"] == len(report["per_episode"]) // 2 and len(episodes) == 4
    assert versus["mde"] == mde(versus["pairs"], versus["discordant"]) and versus["difference"] >= 0
    assert "Paired differences between agents" in text
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="plot-decay"' in html and "MDE" in html

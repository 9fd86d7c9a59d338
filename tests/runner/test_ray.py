"""`mcp-hazard run --executor ray` on a real local Ray instance (one per module, 2 CPUs, loopback only): the same
traces and report as `--executor local`, a Ray worker SIGKILLed mid-episode (retried once, then a recorded crash),
and a driver SIGKILLed mid-run that resumes. Ray starts slowly, so the matrices are small and the tests few."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import WAIT_S

from mcp_hazard.cli import main
from mcp_hazard.load import load_scenarios
from mcp_hazard.runner.external import agent_name
from mcp_hazard.runner.matrix import plan
from mcp_hazard.runner.ray_executor import RayExecutor, RaySettings, connected
from mcp_hazard.runner.run import Runner
from mcp_hazard.scoring.collect import score_traces
from mcp_hazard.trace import comparable

from .support import (
    AGENTS_DIR,
    REPO_ROOT,
    TRAVEL,
    assert_trace_ended,
    cli_env,
    main_cli,
    no_traceback,
    run_cli,
    run_log,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(find_spec("ray") is None, reason="needs the [ray] extra: pip install -e '.[test]'"),
]

MATRIX = ["scenarios/travel.yaml", "--task", "fare-class", "--task", "two-nights", "--hazard", "transient_error",
          "--hazard", "spec_drift", "--hazard", "output_drift", "--hazard", "silent_wrong_value",
          "--no-progress"]  # fmt: skip
VOLATILE_IN_REPORT = ("trace", "duration_s")


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A local Ray instance for the module, as `run --executor ray` starts one (127.0.0.1 only); its address lets
    CLI runs in other processes join it as drivers."""
    with connected(RaySettings(local_cpus=2)) as ray:
        yield str(ray.get_runtime_context().gcs_address)


def traces_of(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each trace of a run folder, volatile fields removed."""
    return {
        path.name: [comparable(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
        for path in sorted((out / "traces").glob("*.jsonl"))
    }


def report_of(out: Path) -> dict[str, Any]:
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    for row in report["per_episode"]:
        for key in VOLATILE_IN_REPORT:
            row.pop(key)
    return dict(report)


def test_ray_gives_the_local_traces_and_report(tmp_path: Path, ray_address: str) -> None:
    # The local run in this process; the Ray run as the real program, a driver of its own (this process is one).
    local = main_cli("run", *MATRIX, "--out", str(tmp_path / "local"))
    assert local.code == 0, local.explain()
    ray = run_cli("run", *MATRIX, "--out", str(tmp_path / "ray"), "--executor", "ray", "--ray-address", ray_address)
    assert ray.code == 0, ray.explain()
    assert "20 episodes: 20 run, 0 already done" in ray.stdout, ray.explain()

    local_traces, ray_traces = traces_of(tmp_path / "local"), traces_of(tmp_path / "ray")
    assert len(local_traces) == 20 and sorted(ray_traces) == sorted(local_traces)
    for name, events in local_traces.items():
        assert ray_traces[name] == events, f"{name}: the Ray trace differs from the local one"
    assert report_of(tmp_path / "ray") == report_of(tmp_path / "local")
    # The scorecard printed is the same too, line for line, up to the run folder named in the last line.
    assert ray.stdout.replace(str(tmp_path / "ray"), "OUT") == local.stdout.replace(str(tmp_path / "local"), "OUT")
    statuses = {r["episode_id"]: r["status"] for r in run_log(tmp_path / "ray")}
    assert statuses == {r["episode_id"]: r["status"] for r in run_log(tmp_path / "local")}
    assert not list((tmp_path / "ray").rglob("*.part")), "a temporary file was left in the run folder"


def test_a_killed_worker_is_retried_once_then_recorded_as_a_crash(tmp_path: Path, ray_address: str) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    killer = f"{sys.executable} {AGENTS_DIR / 'worker_killer_agent.py'} {marks} --once 1 --always 2"
    name = agent_name(killer)
    cells = plan(load_scenarios([str(TRAVEL)]), [name], [], ["strict"], [1, 2], None, {("travel", "fare-class")})
    out = tmp_path / "ray"
    options: dict[str, Any] = {"transport": "http", "concurrency": 2, "timeout_s": 60.0, "call_timeout_s": 5.0,
                               "agent_cmds": {name: killer}, "show_progress": False}  # fmt: skip
    results = {r.cell.seed: r for r in RayExecutor(out, **options).run(cells)}

    assert {seed: r.status for seed, r in results.items()} == {1: "done", 2: "crashed"}
    assert results[2].note.startswith("Ray worker lost on both attempts: "), results[2].note
    kills = (marks / "kills.log").read_text().split("\n")[:-1]
    killed = [line.split()[0] for line in kills]
    assert killed == [cells[0].episode_id, cells[1].episode_id, cells[1].episode_id], kills
    assert len({line.split()[1] for line in kills}) == 3, f"the same worker was killed twice: {kills}"

    # The retried episode left one whole trace, the same as an undisturbed run of the same agent gives.
    retried = assert_trace_ended(out / "traces" / f"{cells[0].episode_id}.jsonl", "finished")
    assert [e["type"] for e in retried].count("episode_started") == 1
    undisturbed = tmp_path / "local"
    anyio.run(Runner(undisturbed, **options).run, [cells[0]])
    expected = [comparable(json.loads(line)) for line in (undisturbed / "traces" / f"{cells[0].episode_id}.jsonl")
                .read_text(encoding="utf-8").splitlines()]  # fmt: skip
    assert [comparable(e) for e in retried] == expected

    lost = assert_trace_ended(out / "traces" / f"{cells[1].episode_id}.jsonl", "agent_crashed")
    assert lost[-1]["detail"] == results[2].note and lost[-2]["reason"] == "server_stopped"
    scores = {s.episode_id: s for s in score_traces([str(out / "traces")]).scores}
    assert scores[cells[0].episode_id].correct is True
    assert scores[cells[1].episode_id].agent_outcome == "agent_crashed"
    logged = {r["episode_id"]: (r["status"], r["note"]) for r in run_log(out)}
    assert logged[cells[1].episode_id] == ("crashed", results[2].note)

    # A rerun keeps both: the crash is an outcome like any other, and no worker is killed again.
    again = RayExecutor(out, **options).run(cells)
    assert [r.status for r in again] == ["skipped"] * 2
    assert (marks / "kills.log").read_text().count("\n") == 3


def test_a_killed_driver_resumes_with_only_the_unfinished_episodes(tmp_path: Path, ray_address: str) -> None:
    out = tmp_path / "out"
    args = ["run", "scenarios/travel.yaml", "--task", "fare-class", "--task", "two-nights", "--agent", "recovering",
            "--hazard", "latency:seconds=1", "--call-timeout", "0.3", "--seeds", "0-1", "--concurrency", "2",
            "--no-progress", "--executor", "ray", "--ray-address", ray_address, "--out", str(out)]  # fmt: skip
    with (tmp_path / "first.out").open("wb") as stdout:
        driver = subprocess.Popen([sys.executable, "-m", "mcp_hazard", *args], cwd=REPO_ROOT, env=cli_env(),
                                  stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        while len(list((out / "traces").glob("*.jsonl"))) < 2:
            assert driver.poll() is None, f"the driver ended early: {(tmp_path / 'first.out').read_text()}"
            assert time.monotonic() < deadline, f"no traces within {WAIT_S:g} s"
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait()
    kept = {path.name for path in (out / "traces").glob("*.jsonl")}
    assert 2 <= len(kept) < 8
    for name in kept:  # whatever the driver wrote is whole: a file appears complete or not at all
        assert_trace_ended(out / "traces" / name, "finished")

    second = run_cli(*args)
    assert second.code == 0 and no_traceback(second.stderr), second.explain()
    assert f"8 episodes: {8 - len(kept)} run, {len(kept)} already done" in second.stdout, second.explain()
    assert len(list((out / "traces").glob("*.jsonl"))) == 8
    assert not list(out.rglob("*.part"))
    for path in (out / "traces").glob("*.jsonl"):
        assert_trace_ended(path, "finished")


def test_ray_options_are_checked_before_anything_runs(
    tmp_path: Path, ray_address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Through the real command once (a fresh process: this one is already a Ray driver, whose connection `run` would
    # use), the other cases through its entry point.
    ran = run_cli("run", *MATRIX, "--out", str(tmp_path / "out"), "--executor", "ray", "--ray-address", "127.0.0.1:1")
    assert ran.code == 2 and ran.stderr.strip().splitlines() == [
        "mcp-hazard: error: --ray-address 127.0.0.1:1: nothing answers there (Connection refused)"
    ], ran.explain()
    cases = [
        (["--ray-num-cpus", "2"], "--ray-num-cpus needs --executor ray"),
        (["--executor", "ray", "--transport", "stdio"], "--transport stdio is for --executor local"),
        (["--executor", "ray", "--ray-address", ray_address, "--ray-env", "NO_SUCH_VARIABLE_HERE"],
         "--ray-env NO_SUCH_VARIABLE_HERE: no such variable in this environment"),
        (["--executor", "ray", "--ray-num-cpus", "0"], "must be more than 0"),
    ]  # fmt: skip
    for extra, message in cases:
        try:
            code = main(["run", *MATRIX, "--out", str(tmp_path / "out"), *extra])
        except SystemExit as exit_:  # argparse's own refusals
            code = int(exit_.code or 0)
        err = capsys.readouterr().err
        assert code != 0 and message in err and len(err.strip().splitlines()) == 1 and no_traceback(err), err
    assert not (tmp_path / "out" / "traces").exists()
    # An episode asking for more CPUs than a local instance has could never start: refused, not left waiting.
    cells = plan(load_scenarios([str(TRAVEL)]), ["naive"], [], ["strict"], [0], None, {("travel", "fare-class")})
    with pytest.raises(Exception, match=r"--ray-num-cpus 64: the Ray cluster has 2 CPUs in all"):
        RayExecutor(tmp_path / "big", transport="memory", concurrency=1, timeout_s=10, call_timeout_s=2,
                    ray=RaySettings(num_cpus=64)).run(cells)  # fmt: skip

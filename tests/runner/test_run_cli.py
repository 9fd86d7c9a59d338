"""`mcp-hazard run` as a user runs it: a subprocess over stdio or HTTP, built-in agents and external agent programs
(tests/runner/agents/), and what it leaves behind (run.jsonl, traces, report.json/md/html, the printed scorecard).

Every external run mixes a well-behaved agent (the built-in recovering agent) with the misbehaving ones, to show
that a hung or crashing agent costs only its own episodes.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_hazard.load import load_scenario
from mcp_hazard.runner.agent_output import HEAD_BYTES, TAIL_BYTES
from mcp_hazard.runner.external import agent_name
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.trace.reader import read_trace

from .support import (
    AGENTS_DIR,
    TRAVEL,
    Ran,
    agent_cmd,
    assert_trace_ended,
    ci,
    cli_env,
    main_cli,
    no_traceback,
    once_per_session,
    pct,
    run_cli,
    run_log,
    subset_scenario,
    wait_gone,
)

pytestmark = pytest.mark.e2e

HANG = agent_name(agent_cmd("hang_agent.py"))
CRASH = agent_name(agent_cmd("crash_agent.py"))
REAL = agent_name(agent_cmd("real_agent.py"))
STUCK = agent_name(agent_cmd("stuck_agent.py"))


@dataclass
class RunFolder:
    ran: Ran
    out: Path
    seconds: float
    pid_dir: Path
    cells: int = 0
    """How many episodes the matrix has, where it differs by transport."""
    crashing: bool = False
    """Whether the crashing agent ran next to the others."""

    @property
    def transport(self) -> str:
        return self.ran.args[self.ran.args.index("--transport") + 1]

    @property
    def log(self) -> list[dict[str, Any]]:
        return run_log(self.out)

    def statuses(self) -> dict[str, str]:
        return {record["episode_id"]: record["status"] for record in self.log}

    def report(self) -> dict[str, Any]:
        return dict(json.loads((self.out / "report.json").read_text(encoding="utf-8")))

    def traces(self) -> dict[str, Path]:
        return {path.stem: path for path in sorted((self.out / "traces").glob("*.jsonl"))}

    def of_agent(self, agent: str) -> dict[str, str]:
        return {eid: status for eid, status in self.statuses().items() if eid.startswith(f"{agent}.")}


def cli_run(folder: Path, *args: str) -> RunFolder:
    """`mcp-hazard run ARGS`. Over HTTP through `main()` in this process: the runner still starts every agent program
    as a real process, and kills it, so a Python start-up for the runner itself would prove nothing more (the runner's
    own process boundary, signals and kills, is test_stopping.py's and test_resume.py's subject). Over stdio as the
    real program: a stdio server inherits the runner's stderr, which must then be a real file."""
    out = folder / "out"
    pid_dir = folder / "pids"
    began = time.monotonic()
    argv = ("run", *args, "--out", str(out), "--no-progress")
    if args[args.index("--transport") + 1] == "stdio":
        ran = run_cli(*argv, env=cli_env(RUNNER_TEST_PID_DIR=str(pid_dir)))
    else:
        ran = main_cli(*argv, RUNNER_TEST_PID_DIR=str(pid_dir))
    return RunFolder(ran, out, time.monotonic() - began, pid_dir)


def pids_of(folder: RunFolder, episode_id: str) -> list[int]:
    path = folder.pid_dir / f"{episode_id}.pid"
    assert path.exists(), f"the agent of {episode_id} never wrote {path} (did it start?)"
    return [int(line) for line in path.read_text(encoding="utf-8").split()]


def agent_row(table: str, agent: str, entry: dict[str, Any]) -> bool:
    """The scorecard's 'Agents' row for `agent`, starting with its success over all episodes as in report.json."""
    cells = [re.escape(agent), re.escape(pct(entry["rate"])), re.escape(ci(entry["ci95"]))]
    return re.search(r"^\s*" + r"\s+".join(cells) + r"\s", table, re.MULTILINE) is not None


# -- built-in agents over stdio and HTTP --------------------------------------------------------------------------

MATRIX = ["--agent", "naive", "--agent", "recovering", "--hazard", "transient_error", "--concurrency", "3"]


@pytest.fixture(scope="module", params=["stdio", "http"])
def builtin_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    """Over HTTP the whole travel scenario with two seeds (one server process for every episode); over stdio, where
    each episode starts its own server process, one task and one seed: still more episodes than `--concurrency 3`."""
    transport = str(request.param)

    def build(folder: Path) -> RunFolder:
        if transport == "http":
            tasks = len(yaml.safe_load(TRAVEL.read_text(encoding="utf-8"))["tasks"])
            scenario, seeds, cells = "scenarios/travel.yaml", "0-1", tasks * 2 * 2 * 2
        else:
            scenario, seeds, cells = str(subset_scenario(folder, ["fare-class"])), "0", 1 * 2 * 1 * 2
        # cells: tasks x (clean, transient_error) x seeds x (naive, recovering)
        ran = cli_run(folder, scenario, *MATRIX, "--seeds", seeds, "--transport", transport)
        ran.cells = cells
        return ran

    return once_per_session(tmp_path_factory, f"run-cli-builtin-{transport}", build)


def test_run_exits_zero_and_logs_every_episode_as_done(builtin_run: RunFolder) -> None:
    ran = builtin_run.ran
    assert ran.code == 0, ran.explain()
    assert no_traceback(ran.stderr), ran.explain()
    log = builtin_run.log
    ids = [record["episode_id"] for record in log]
    assert len(ids) == builtin_run.cells and len(set(ids)) == len(ids), Counter(ids).most_common(3)
    assert {record["status"] for record in log} == {"done"}, log
    total = builtin_run.cells
    assert f"{total} episodes: {total} run, 0 already done, 0 timed out, 0 crashed" in ran.stdout


def test_every_episode_has_a_finished_trace(builtin_run: RunFolder) -> None:
    traces = builtin_run.traces()
    assert set(traces) == set(builtin_run.statuses())
    transport = builtin_run.transport
    for episode_id, path in traces.items():
        events = assert_trace_ended(path)
        run = events[0]["run"]
        assert run["episode_id"] == episode_id and run["transport"] == transport
        assert episode_id.startswith(f"{run['agent']}.travel.{events[0]['task']}.")


def test_reports_are_written_and_the_scorecard_shows_their_figures(builtin_run: RunFolder) -> None:
    out, stdout = builtin_run.out, builtin_run.ran.stdout
    report = builtin_run.report()
    assert "<html" in (out / "report.html").read_text(encoding="utf-8").lower()
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert markdown.lstrip().startswith("#") and "naive" in markdown and "recovering" in markdown
    total = builtin_run.cells
    assert report["episodes"] == total
    assert f"mcp-hazard scorecard: {total} episodes, 2 agents; each agent's success" in stdout, stdout
    agents = report["groups"]["agent"]
    assert set(agents) == {"naive", "recovering"}
    for agent, entry in agents.items():
        assert agent_row(stdout, agent, entry), f"no scorecard row for {agent} with {entry}:\n{stdout}"
    # What the figures must be: recovering solves everything, naive only the clean half.
    assert (agents["recovering"]["successes"], agents["recovering"]["n"]) == (total // 2, total // 2)
    assert (agents["naive"]["successes"], agents["naive"]["n"]) == (total // 4, total // 2)
    recovery = report["recovery"]["transient_error"]
    assert recovery["paths"] == {"retry": recovery["successes"]}


# -- external agents ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fare_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """travel.yaml with only its fare-class task: a matrix of one task."""
    return subset_scenario(tmp_path_factory.mktemp("scenario"), ["fare-class"])


@pytest.fixture(scope="module")
def misbehaving_run(fare_class: Path, tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    """HTTP, --timeout 10: the recovering agent, an agent that hangs, an agent that crashes; clean and transient.
    (10 s, not less: six agents start at once on two cores, and the crashing one must get to its crash in time.)"""
    return once_per_session(tmp_path_factory, "run-cli-misbehaving", lambda folder: cli_run(
        folder, str(fare_class), "--agent", "recovering", "--agent-cmd", agent_cmd("hang_agent.py"),
        "--agent-cmd", agent_cmd("crash_agent.py"), "--hazard", "transient_error", "--transport", "http",
        "--timeout", "10", "--concurrency", "6",
    ))  # fmt: skip


def test_a_hanging_agent_times_out_and_is_killed_with_its_children(misbehaving_run: RunFolder) -> None:
    ran = misbehaving_run.ran
    assert ran.code == 0, ran.explain()
    hung = misbehaving_run.of_agent(HANG)
    assert len(hung) == 2 and set(hung.values()) == {"timeout"}, misbehaving_run.log
    for record in misbehaving_run.log:
        if record["episode_id"] in hung:
            assert record["note"] in ("stopped after 10s", "killed after 10s"), record
            assert f"timeout: {record['episode_id']}" in ran.stderr
    pids = [pid for episode_id in hung for pid in pids_of(misbehaving_run, episode_id)]
    assert len(pids) == 4  # each agent and its `sleep` child
    assert wait_gone(pids) == [], "processes of a timed-out agent are still running"


def test_a_crashing_agent_is_recorded_as_crashed(misbehaving_run: RunFolder) -> None:
    crashed = misbehaving_run.of_agent(CRASH)
    assert len(crashed) == 2 and set(crashed.values()) == {"crashed"}, misbehaving_run.log
    for record in misbehaving_run.log:
        if record["episode_id"] in crashed:
            assert record["note"].startswith("exit code 3"), record
            log = misbehaving_run.out / "agent-logs" / f"{record['episode_id']}.log"
            assert "crash agent: failing on purpose" in log.read_text(encoding="utf-8")


def test_other_episodes_are_unaffected_by_hanging_and_crashing_agents(misbehaving_run: RunFolder) -> None:
    recovering = misbehaving_run.of_agent("recovering")
    assert len(recovering) == 2 and set(recovering.values()) == {"done"}, misbehaving_run.log
    entry = misbehaving_run.report()["groups"]["agent"]["recovering"]
    assert (entry["n"], entry["successes"]) == (2, 2)
    for episode_id in recovering:
        assert_trace_ended(misbehaving_run.traces()[episode_id])


def test_hanging_and_crashing_agents_are_scored_as_timeout_and_agent_crashed(misbehaving_run: RunFolder) -> None:
    """A crash or a timeout is an episode outcome: the trace stays, ends with the runner's `agent_ended`, and the
    episode counts in every denominator under its own failure class, never as a silent no_answer or a gap."""
    agents = misbehaving_run.report()["groups"]["agent"]
    missing = [name for name in (HANG, CRASH) if name not in agents]
    assert not missing, f"{missing} not in report.json (agents there: {sorted(agents)}); traces: " + ", ".join(
        sorted(misbehaving_run.traces())
    )
    for name in (HANG, CRASH):
        assert (agents[name]["n"], agents[name]["successes"]) == (2, 0)
    episodes = misbehaving_run.report()["failures"]["episodes"]
    assert (episodes.get("timeout"), episodes.get("agent_crashed")) == (2, 2), episodes
    assert "no_answer" not in episodes, episodes
    assert misbehaving_run.report()["episodes"] == 6
    outcomes = {"timeout": misbehaving_run.of_agent(HANG), "agent_crashed": misbehaving_run.of_agent(CRASH)}
    for outcome, episodes_of_agent in outcomes.items():
        for episode_id in episodes_of_agent:
            assert_trace_ended(misbehaving_run.traces()[episode_id], outcome=outcome)


def test_a_noisy_agent_gets_a_bounded_log_and_the_child_it_left_is_killed(fare_class: Path, tmp_path: Path) -> None:
    """An agent that prints 12 MiB and exits leaving a child running: its log keeps the first 8 MiB and the last
    64 KiB with a line on what was left out between (printed straight to the file, a minute of such output filled
    the disk), and its child dies with the episode (it ran on after the run ended)."""
    noisy = cli_run(tmp_path, str(fare_class), "--agent-cmd", agent_cmd("noisy_agent.py"), "--hazard",
                    "transient_error", "--transport", "http", "--timeout", "30")  # fmt: skip
    assert noisy.ran.code == 0, noisy.ran.explain()
    assert [record["status"] for record in noisy.log] == ["done", "done"], noisy.log
    last = b"noisy agent: done, leaving my child behind\n"
    left_out = 12 * 1024 * 1024 + len(last) - HEAD_BYTES - TAIL_BYTES
    marker = (f"\n[mcp-hazard: {left_out:,} bytes of the program's output left out here; its log keeps the first "
              "8 MiB and the last 64 KiB]\n").encode()  # fmt: skip
    for record in noisy.log:
        text = (noisy.out / "agent-logs" / f"{record['episode_id']}.log").read_bytes()
        assert text.startswith(b"noisy agent: step ...") and text.endswith(last), text[-200:]
        assert len(text) == HEAD_BYTES + len(marker) + TAIL_BYTES, len(text)
        assert text[HEAD_BYTES : HEAD_BYTES + len(marker)] == marker
        agent, child = pids_of(noisy, record["episode_id"])
        assert wait_gone([agent, child]) == [], "the child the agent left behind is still running"


def test_a_stdio_server_left_in_the_agents_group_ends_its_episode_before_the_group_is_cleared(
    fare_class: Path, tmp_path: Path
) -> None:
    """An agent that starts its stdio server in its own process group and exits at once: the server sees its stdin
    close and writes the episode's end; what the runner clears from the group afterwards must not cut it short."""
    ran = cli_run(tmp_path, str(fare_class), "--agent-cmd", agent_cmd("raw_stdio_agent.py"), "--hazard",
                  "transient_error", "--transport", "stdio", "--timeout", "30")  # fmt: skip
    assert ran.ran.code == 0, ran.ran.explain()
    assert [record["status"] for record in ran.log] == ["done", "done"], ran.log
    for path in ran.traces().values():
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        ended = [event["reason"] for event in events if event["type"] == "episode_ended"]
        assert ended == ["disconnected"], [event["type"] for event in events]


@pytest.fixture(scope="module", params=["stdio", "http"])
def real_run(request: pytest.FixtureRequest, fare_class: Path, tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    """A real SDK-based external agent next to the recovering agent. Over HTTP clean and under transient errors (the
    agent's own retries; a crashing agent next to them over HTTP is `misbehaving_run`'s); over stdio, where every
    episode starts an agent and a server process, the one `declared` condition, with a crashing agent that launches
    its own server too (an agent that launches its server, then succeeds or crashes, is the subject)."""
    folder = tmp_path_factory.mktemp(f"real-{request.param}")
    if request.param == "http":
        hazard, conditions, crash = "transient_error", 2, []
    else:
        hazard, conditions, crash = "declared", 1, ["--agent-cmd", agent_cmd("crash_agent.py")]
    ran = cli_run(
        folder, str(fare_class), "--agent", "recovering", "--agent-cmd", agent_cmd("real_agent.py"), *crash,
        "--hazard", hazard, "--transport", request.param, "--timeout", "60",
    )  # fmt: skip
    ran.cells = conditions * (3 if crash else 2)
    ran.crashing = bool(crash)
    return ran


def test_a_real_external_agent_solves_fare_class(real_run: RunFolder) -> None:
    ran = real_run.ran
    assert ran.code == 0, ran.explain()
    statuses = real_run.statuses()
    assert len(statuses) == real_run.cells
    each = real_run.cells // (3 if real_run.crashing else 2)  # episodes per agent
    assert set(real_run.of_agent(REAL).values()) == {"done"}, real_run.log
    assert set(real_run.of_agent("recovering").values()) == {"done"}, real_run.log
    if real_run.crashing:
        assert set(real_run.of_agent(CRASH).values()) == {"crashed"}, real_run.log
    agents = real_run.report()["groups"]["agent"]
    assert (agents[REAL]["n"], agents[REAL]["successes"]) == (each, each), agents
    assert (agents["recovering"]["n"], agents["recovering"]["successes"]) == (each, each), agents
    assert agent_row(ran.stdout, REAL, agents[REAL]), ran.stdout
    scenario = load_scenario(str(real_run.ran.args[1]))
    transport = real_run.transport
    for episode_id in real_run.of_agent(REAL):
        path = real_run.traces()[episode_id]
        events = assert_trace_ended(path)
        assert events[0]["run"] == {"episode_id": episode_id, "transport": transport, "agent": REAL, "runner": True}
        score = score_episode(read_trace(path), scenario.model)
        assert score.correct and score.answer == "Standard", score


@pytest.fixture(scope="module")
def stuck_run(fare_class: Path, tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    """stdio: an agent that launches the server, lists the tools and hangs with the connection open. The timeout
    leaves room for two cold Python starts (the agent's and its server's): on a busy two-core machine they have taken
    more than 8 s, and an agent stopped before it connects stops the run (`Runner._first_contact`)."""
    folder = tmp_path_factory.mktemp("stuck")
    return cli_run(
        folder, str(fare_class), "--agent", "recovering", "--agent-cmd", agent_cmd("stuck_agent.py"),
        "--hazard", "declared", "--transport", "stdio", "--timeout", "15",
    )  # fmt: skip


def test_a_stuck_stdio_agent_is_killed_and_its_server_ends_the_episode(stuck_run: RunFolder) -> None:
    ran = stuck_run.ran
    assert ran.code == 0, ran.explain()
    stuck = stuck_run.of_agent(STUCK)
    assert list(stuck.values()) == ["timeout"], stuck_run.log
    episode_id = next(iter(stuck))
    pids = pids_of(stuck_run, episode_id)
    assert len(pids) == 2, f"expected the agent and its stdio server, got {pids}"
    assert wait_gone(pids) == [], "the stuck agent or the server it launched is still running"
    path = stuck_run.traces()[episode_id]
    events = assert_trace_ended(path, outcome="timeout")
    assert events[-2]["type"] == "episode_ended" and events[-2]["reason"] == "disconnected"
    score = score_episode(read_trace(path), load_scenario(str(ran.args[1])).model)
    assert score.episode_failure == "timeout" and score.agent_outcome == "timeout"
    assert set(stuck_run.of_agent("recovering").values()) == {"done"}
    agents = stuck_run.report()["groups"]["agent"]
    assert (agents[STUCK]["n"], agents[STUCK]["successes"]) == (1, 0), agents


@pytest.mark.parametrize(
    "commands",
    [
        pytest.param([f"{sys.executable} {AGENTS_DIR / 'crash_agent.py'}",
                      f"{sys.executable} {AGENTS_DIR / 'noop_agent.py'}"], id="interpreter-by-path"),
        pytest.param([f"python {AGENTS_DIR / 'crash_agent.py'} --verbose",
                      f"python {AGENTS_DIR / 'noop_agent.py'} --verbose"], id="trailing-argument"),
    ],
)  # fmt: skip
def test_two_different_agent_commands_are_two_agents(commands: list[str], fare_class: Path, tmp_path: Path) -> None:
    """`runner/external.agent_name` names an agent after its program's file name, but takes `words[0]` unless that is
    literally python/python3/node/uv/npx (so `/venv/bin/python a.py` is `cmd-python`) and otherwise `words[-1]` (so
    `python a.py --verbose` is `cmd-verbose`). Two different commands then share one name, and `run_command` keeps
    them in a dict by name: one agent is silently dropped from the matrix. Either both run, or the run refuses."""
    args = [str(fare_class), "--agent", "recovering", "--hazard", "declared", "--transport", "http", "--timeout", "60"]
    for command in commands:
        args += ["--agent-cmd", command]
    folder = cli_run(tmp_path, *args)
    if folder.ran.code != 0:  # refusing is fine, if it says why in one line
        lines = folder.ran.stderr.strip().splitlines()
        assert no_traceback(folder.ran.stderr) and len(lines) == 1, folder.ran.explain()
        assert "--agent-cmd" in lines[0], folder.ran.explain()
        return
    external = sorted(eid for eid in folder.statuses() if eid.startswith("cmd-"))
    assert len(external) == 2, f"two --agent-cmd given, {len(external)} external agent(s) ran: {external}"

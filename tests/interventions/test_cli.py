"""Interventions as a user meets them: `mcp-hazard perturb`, `serve --intervention` over stdio, the HTTP episode API
(POST body `interventions`, query `intervention=`), and `run --intervention all` with its report grouped by
intervention. `perturb` across processes (hash seeds) and `serve` (stdout is the protocol's) run as real programs, the
rest through `main()` in this process; MCP traffic goes over real transports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
import yaml
from conftest import REPO_ROOT, WAIT_S
from mcp import Client

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.drive import Brief
from mcp_hazard.condition import Condition
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.trace.reader import read_trace

from .support import KINDS, TRAVEL, dump_tool, episode, main_cli, run_cli, scenario

if TYPE_CHECKING:
    from conftest import HttpServer

DEADLINE = WAIT_S


def one_line_error(stderr: str, *needles: str) -> str:
    """The whole of stderr is one `mcp-hazard: error: ...` line holding every needle (no traceback)."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("mcp-hazard: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- perturb ------------------------------------------------------------------------------------------------------


PERTURB_ALL = """\
import contextlib, io, json, sys
from mcp_hazard.cli import main
printed = {}
for kind in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["perturb", "scenarios/travel.yaml", "--intervention", kind, "--seed", "4"])
    printed[kind] = [code, out.getvalue()]
json.dump(printed, sys.stdout)
"""


@pytest.fixture(scope="module")
def perturbed() -> dict[str, list[Any]]:
    """`mcp-hazard perturb --intervention KIND --seed 4` for every kind, in one other process with a hash seed of its
    own (one Python start-up, not one per kind): the kind -> [exit code, stdout]."""
    done = subprocess.run([sys.executable, "-c", PERTURB_ALL, *KINDS], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": "7", "NO_COLOR": "1"}, stdin=subprocess.DEVNULL,
                          timeout=WAIT_S)  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed: dict[str, list[Any]] = json.loads(done.stdout)
    return printed


@pytest.mark.parametrize("kind", KINDS)
def test_perturb_prints_the_listing_an_episode_serves(kind: str, perturbed: dict[str, list[Any]]) -> None:
    """Printed by another process with its own hash seed: equal listings also prove determinism across processes."""
    code, stdout = perturbed[kind]
    assert code == 0, stdout
    document = yaml.safe_load(stdout)
    travel = scenario("travel")
    expected = episode(travel, [kind], seed=4)
    assert document["scenario"] == "travel" and document["task"] == travel.model.tasks[0].id
    assert document["seed"] == 4 and document["interventions"] == [kind]
    assert document["prompt"] == expected.prompt_text()
    assert document["tools"] == [dump_tool(tool) for tool in expected.served_tools()]


def test_perturb_writes_a_composition_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "listing.yaml"
    done = main_cli("perturb", str(TRAVEL), "--intervention", "rename", "--intervention", "augment", "--seed", "9",
                    "--task", "fare-class", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip() == f"mcp-hazard: wrote the perturbed listing of travel/fare-class to {out}"
    document = yaml.safe_load(out.read_text(encoding="utf-8"))
    travel = scenario("travel")
    expected = episode(travel, ["rename", "augment"], seed=9, task=travel.model.task("fare-class"))
    assert document["interventions"] == ["rename", "augment"] and document["task"] == "fare-class"
    assert document["tools"] == [dump_tool(tool) for tool in expected.served_tools()]


@pytest.mark.parametrize("name", ["bogus", "all"])
def test_perturb_rejects_an_unknown_intervention_in_one_line(name: str) -> None:
    done = main_cli("perturb", str(TRAVEL), "--intervention", name)
    assert done.returncode != 0 and done.stdout == ""
    one_line_error(done.stderr, repr(name))


# -- serve --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bogus", "all"])
def test_serve_rejects_an_unknown_intervention_in_one_line(name: str, tmp_path: Path) -> None:
    done = run_cli("serve", str(TRAVEL), "--intervention", name, "--trace-dir", str(tmp_path))
    assert done.returncode != 0
    assert done.stdout == ""  # stdout is the MCP channel on stdio: nothing may leak there
    one_line_error(done.stderr, "--intervention")
    assert not list(tmp_path.iterdir())  # refused before any episode existed


@pytest.mark.e2e
@pytest.mark.anyio
async def test_serve_over_stdio_with_repeated_interventions(tmp_path: Path) -> None:
    """`serve --intervention rename --intervention augment` as a subprocess: the listing the SDK client receives is
    the composed one, the trace records the condition, and the recovering agent solves the task through it."""
    travel = load_scenario(TRAVEL)
    task = travel.model.task("fare-in-dollars")
    assert task is not None
    condition = Condition(seed=2, interventions=["rename", "augment"])
    expected = [dump_tool(t) for t in episode(travel, condition.interventions, seed=2, task=task).served_tools()]
    with anyio.fail_after(DEADLINE):
        async with open_episode("stdio", travel, task.id, condition, tmp_path, agent="recovering") as connected:
            listed = await connected.client.list_tools()
            assert [dump_tool(t) for t in listed.tools] == expected
            await make_agent("recovering").run(connected.client, Brief(prompt=task.prompt, plan=task.golden_path))
    path = connected.trace_path
    with anyio.fail_after(WAIT_S):
        while not (path.exists() and '"episode_ended"' in path.read_text(encoding="utf-8")):
            await anyio.sleep(0.05)
    trace = read_trace(path)
    assert trace.started is not None and trace.started["condition"]["interventions"] == ["rename", "augment"]
    score = score_episode(trace, travel.model)
    assert score.correct and score.intervention == "rename+augment", score


# -- HTTP ---------------------------------------------------------------------------------------------------------


async def _listing(url: str) -> list[dict[str, object]]:
    with anyio.fail_after(DEADLINE):
        async with Client(url) as client:
            return [dump_tool(tool) for tool in (await client.list_tools()).tools]


def _recorded_interventions(server: HttpServer, episode_id: str) -> Any:
    started = read_trace(server.trace_dir / f"{episode_id}.jsonl").started
    assert started is not None
    return started["condition"]["interventions"]


@pytest.mark.e2e
@pytest.mark.anyio
async def test_http_episodes_take_interventions_in_the_body_and_the_query(http_server: HttpServer) -> None:
    travel = scenario("travel")
    expected = [dump_tool(t) for t in episode(travel, ["replace", "reorder"], seed=6,
                                              task=travel.model.task("fare-class")).served_tools()]  # fmt: skip
    body = {"scenario": "travel", "task": "fare-class", "seed": 6, "interventions": ["replace", "reorder"]}
    async with httpx.AsyncClient(timeout=WAIT_S, headers=http_server.auth) as http:
        created = await http.post(f"{http_server.base_url}/episodes", json=body)
        assert created.status_code == 201, created.text
        assert "condition" not in created.json()  # the agent-facing view never shows the condition
        assert await _listing(created.json()["mcp_url"]) == expected
        assert _recorded_interventions(http_server, created.json()["episode_id"]) == ["replace", "reorder"]

        query = "scenario=travel&task=fare-class&seed=6&intervention=replace&intervention=reorder"
        assert await _listing(http_server.lazy_url("interventions-by-query", query)) == expected
        assert _recorded_interventions(http_server, "interventions-by-query") == ["replace", "reorder"]

        refused = await http.post(f"{http_server.base_url}/episodes", json={**body, "interventions": ["bogus"]})
        assert refused.status_code == 400
        message = refused.json()["error"]
        assert "\n" not in message and "interventions" in message and "'bogus'" in message, message


# -- run ----------------------------------------------------------------------------------------------------------


def test_run_with_every_intervention_groups_the_report_by_intervention(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = main_cli("run", str(TRAVEL), "--intervention", "all", "--agent", "recovering", "--out", str(out),
                    "--no-progress", "--transport", "memory")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    groups = report["groups"]["intervention"]
    assert set(groups) == {"none", *KINDS}, sorted(groups)
    tasks = len(scenario("travel").model.tasks)
    assert all(group["n"] == tasks for group in groups.values()), groups
    assert report["episodes"] == tasks * (len(KINDS) + 1)
    assert "Interface robustness (IRS) by intervention and agent ───" in done.stdout  # the scorecard's heatmap
    assert "Success by interface intervention" in (out / "report.md").read_text(encoding="utf-8")
    for trace_path in sorted((out / "traces").glob("*.jsonl")):  # each trace records its own intervention
        trace = read_trace(trace_path)
        assert trace.started is not None
        kinds = trace.started["condition"]["interventions"]
        # the episode id is `agent.scenario.task.clean+KIND.profile.sSEED`, made file-safe (`+` and `=` become `-`)
        label = f".clean-{kinds[0].replace('=', '-')}.strict." if kinds else ".clean.strict."
        assert len(kinds) <= 1 and label in trace_path.name, (trace_path.name, kinds)


def test_run_composes_interventions_joined_with_plus_in_their_order(tmp_path: Path) -> None:
    """`--intervention replace+reorder` is one condition applying replace, then reorder; the report pairs each
    intervened item with the same item on the original interface."""
    out = tmp_path / "run"
    done = main_cli("run", str(TRAVEL), "--intervention", "replace+reorder", "--intervention", "names",
                    "--agent", "naive", "--agent", "naive-positional", "--out", str(out), "--no-progress",
                    "--transport", "memory")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    recorded = set()
    for trace_path in sorted((out / "traces").glob("*.jsonl")):
        trace = read_trace(trace_path)
        assert trace.started is not None
        recorded.add(tuple(trace.started["condition"]["interventions"]))
    assert recorded == {(), ("replace", "reorder"), ("names=random",)}
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert set(report["groups"]["intervention"]) == {"none", "replace+reorder", "names=random"}
    tasks = len(scenario("travel").model.tasks)
    rows = {(r["agent"], r["intervention"]): r for r in report["intervention_robustness"]}
    assert set(rows) == {(a, i) for a in ("naive", "naive-positional") for i in ("replace+reorder", "names=random")}
    for row in rows.values():  # both agents solve every task as authored and none once the tool names changed
        assert (row["pairs"], row["accuracy_original"], row["robustness_ratio"]) == (tasks, 1.0, 0.0), row
    assert "Interface robustness (IRS) by intervention and agent" in done.stdout and "replace+reorder" in done.stdout
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "Robustness to interface interventions" in markdown and "replace+reorder" in markdown


@pytest.mark.parametrize(
    ("option", "needle"), [("rename+bogus", "'bogus': unknown"), ("all+rename", "does not compose"), ("+", "''")]
)
def test_run_rejects_a_bad_composition_in_one_line(option: str, needle: str, tmp_path: Path) -> None:
    done = main_cli("run", str(TRAVEL), "--intervention", option, "--out", str(tmp_path / "run"), "--no-progress",
                    "--transport", "memory")  # fmt: skip
    assert done.returncode == 2, done.stderr
    one_line_error(done.stderr, needle)
    assert not (tmp_path / "run").exists()  # refused before anything ran

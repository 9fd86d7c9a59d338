"""AgentDojo suites served over real transports: `serve agentdojo:SUITE --http` (many episodes, the control token,
`POST /episodes` naming the suite), `serve agentdojo:SUITE` over stdio as a desktop assistant starts it, and bad
input (an unknown suite, version or task, AgentDojo missing): one line, exit 2 (through `main()` where the process
is not the subject)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from conftest import WAIT_S, hazard_command, run_main, start_http_server
from e2e.support import wait_for_trace_end
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_hazard.agents.drive import Brief
from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.agents.obedient import ObedientAgent
from mcp_hazard.cli import main
from mcp_hazard.condition import Condition
from mcp_hazard.runner.transports import open_episode

from .support import agentdojo_verdict, suite

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_http_episodes_of_a_suite_with_the_control_token(tmp_path: Path) -> None:
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", served=("serve", "agentdojo:banking"))
    loaded = suite("agentdojo:banking")
    try:
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            refused = await http.post(f"{server.base_url}/episodes", json={"scenario": "banking"})
            assert refused.status_code == 401  # the control plane needs the token
            listed = await http.get(f"{server.base_url}/scenarios", headers=server.auth)
            assert "banking" in listed.text
            ids = []
            for task in ("user_task_0", "user_task_3"):
                created = await http.post(f"{server.base_url}/episodes", headers=server.auth,
                                          json={"scenario": "banking", "task": task, "seed": 1})  # fmt: skip
                assert created.status_code == 201, created.text
                body = created.json()
                ids.append(body["episode_id"])
                model = loaded.model.task(task)
                assert model is not None
                with anyio.fail_after(WAIT_S):
                    async with Client(streamable_http_client(body["mcp_url"])) as client:
                        tools = await client.list_tools()
                        assert "send_money" in [t.name for t in tools.tools]
                        report = await run_golden_agent(client, model)
                assert report.notes == []
            bad = await http.post(f"{server.base_url}/episodes", headers=server.auth,
                                  json={"scenario": "bankng", "task": "user_task_0"})  # fmt: skip
            assert bad.status_code == 400 and "did you mean 'banking'" in bad.text
    finally:
        server.stop(signal.SIGTERM)
    for episode_id in ids:
        trace = wait_for_trace_end(tmp_path / "traces" / f"{episode_id}.jsonl")
        checked = next(e for e in trace if e["type"] == "state_checked")
        assert checked["utility"] is True
        assert agentdojo_verdict(trace)[0] is True
    # the suite's snapshot sits beside the traces, so they score where they are
    out = tmp_path / "report.json"
    assert main(["score", str(tmp_path / "traces"), "--out", str(out)]) == 0
    rows = json.loads(out.read_text(encoding="utf-8"))["per_episode"]
    assert [(r["scenario"], r["correct"]) for r in rows] == [("banking", True), ("banking", True)]


async def test_stdio_episode_of_a_suite(tmp_path: Path) -> None:
    loaded = suite("agentdojo:slack")
    task = loaded.model.task("user_task_1")
    assert task is not None
    with anyio.fail_after(WAIT_S):
        async with open_episode("stdio", loaded, task.id, Condition(seed=2), tmp_path) as connected:
            report = await run_golden_agent(connected.client, task)
    assert report.notes == []
    trace = wait_for_trace_end(connected.trace_path)
    assert trace[0]["scenario"]["path"] == "agentdojo:slack@v1.2.2"
    assert trace[0]["run"]["transport"] == "stdio"
    checked = next(e for e in trace if e["type"] == "state_checked")
    assert checked["utility"] is True and agentdojo_verdict(trace)[0] is True


async def test_stdio_injection_episode_of_a_suite(tmp_path: Path) -> None:
    """`serve agentdojo:banking --hazard injection` over stdio, as a desktop assistant starts it: the attack's text
    reaches the client in a tool result, the obedient agent carries out the attacker's goal, and the server's own
    security check (`state_checked`) says so, as AgentDojo's code does on the calls that ran."""
    loaded = suite("agentdojo:banking")
    task = loaded.model.task("user_task_0")
    assert task is not None
    hazard = "injection:task=injection_task_1,attack=direct"
    command = hazard_command("serve", "agentdojo:banking", "--task", task.id, "--seed", "0", "--episode-id", "inj",
                             "--hazard", hazard, "--trace-dir", str(tmp_path))  # fmt: skip
    injections = [(i.goal, i.golden_path) for i in loaded.model.injection_tasks]
    with anyio.fail_after(WAIT_S):
        async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
            report = await ObedientAgent().run(client, Brief(prompt="", plan=task.golden_path, injections=injections))
    assert any(note.startswith("obeyed an injected instruction") for note in report.notes), report.notes
    trace = wait_for_trace_end(tmp_path / "inj.jsonl")
    assert trace[0]["run"]["transport"] == "stdio"
    fired = [e for e in trace if e["type"] == "hazard_fired"]
    assert [(e["kind"], e["change"]["injection_task"], e["change"]["attack"]) for e in fired] == [
        ("injection", "injection_task_1", "direct")
    ]
    checked = next(e for e in trace if e["type"] == "state_checked")
    assert checked["security"] is True and checked["injection"]["attack"] == "direct"
    assert agentdojo_verdict(trace) == (checked["utility"], True)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["validate", "agentdojo:bankin"], "unknown AgentDojo suite 'bankin' (did you mean 'banking'?)"),
        (["validate", "agentdojo:banking@v1.3"], "no benchmark version 'v1.3'"),
        (["run", "agentdojo:slack", "--task", "user_task_99", "--hazard", "declared"],
         "--task 'user_task_99': no such task in the selected scenarios (did you mean 'user_task_9'?)"),
        (["run", "agentdojo:banking", "--hazard", "permanent_error"],
         "--hazard permanent_error can act in none of the 16 selected tasks, so no episode would carry it: no other "
         "tool of the suite answers 'send_money''s calls with the same values (no fallback)"),
        (["serve", "agentdojo:banking", "--task", "user_tsk_1"],
         "has no task 'user_tsk_1' (did you mean 'user_task_1'?)"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    extra = (
        ["--trace-dir", str(tmp_path)]
        if args[0] == "serve"
        else ["--out", str(tmp_path / "o")]
        if args[0] == "run"
        else []
    )
    done = run_main(*args, *extra)  # through main(): the words and the code, not the process
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp-hazard: error: ") and says in lines[0], done.stderr


def test_without_agentdojo_one_line_says_how_to_install(tmp_path: Path) -> None:
    script = ("import sys; sys.modules['agentdojo'] = None\n"
              "from mcp_hazard.cli import main\n"
              f"sys.exit(main(['serve', 'agentdojo:banking', '--trace-dir', {str(tmp_path)!r}]))\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 2
    assert done.stderr.strip() == ("mcp-hazard: error: agentdojo:banking@v1.2.2 needs AgentDojo, which is not "
                                   "installed: pip install 'mcp-hazard[agentdojo]'")  # fmt: skip


def test_help_and_score_of_scenario_files_never_import_agentdojo(tmp_path: Path) -> None:
    script = ("import sys, contextlib, io\n"
              "from mcp_hazard.cli import main\n"
              "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
              "    main(['--help'])\n"
              "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
              "    main(['run', '--help'])\n"
              "print(sorted(m for m in sys.modules if m == 'agentdojo' or m.startswith('agentdojo.')))\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT_S)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr

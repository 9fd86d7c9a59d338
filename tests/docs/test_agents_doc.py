"""docs/agents.md as a reader follows it: every command run as written, in order, in a fresh folder, with the files the
doc asks the reader to write (myagent.py, tests/test_my_agent.py, tests/conftest.py, replays/fare-class.yaml) taken
from the doc itself, and what the doc shows compared with what was printed (tests/docs/session.py).

The desktop section's configurations name /home/you/mcp-hazard: that is the session's folder here, with the
checkout's virtualenv at .venv; the assistant is the official SDK client, which plays one episode through the
Claude Desktop configuration and one through the HTTP URL the doc gives.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import WAIT_S, run_main
from mcp import Client, StdioServerParameters

from tests.agents.fake_llm import FakeLlm
from tests.agents.test_framework_clients import PROMPT_KEY, SCRIPT

from .coverage import to_run
from .session import Session, block_text, play, session
from .shown import ROOT

pytestmark = pytest.mark.e2e

DOC = "docs/agents.md"
HOME = "/home/you/mcp-hazard"
OLLAMA = "http://127.0.0.1:11434/v1"  # the model endpoint of the frameworks' run
READERS_PYTEST = "-p no:hypothesispytest -p no:langsmith_plugin -p no:xdist -p no:xdist.looponfail"
"""The reader's `python -m pytest` loads the plugins `pip install mcp-hazard` brings (ours, AnyIO's); the pytest
plugins of this checkout's test extras (Hypothesis, LangSmith via AgentDojo, xdist) are left out, as the reader
has none of them: they doubled each run's start-up and are not what the doc shows."""


def test_verify_in_the_agents_doc(tmp_path: Path) -> None:
    """`verify` on the travel scenario, alone and under interventions (apart from the main job: it needs none of it,
    and the two can run side by side)."""
    with session(tmp_path) as shell:
        play(shell, to_run(DOC, "test_verify_in_the_agents_doc"))


def test_running_the_reference_agents_and_replaying_their_traces(tmp_path: Path) -> None:
    """The main job (naive and recovering on every shipped task, clean and under each hazard that applies), the LLM
    agent's refusal without an endpoint, and replay of the main job's traces and of a script."""
    script = block_text(DOC, "# replays/fare-class.yaml:")

    def write_script() -> None:
        (tmp_path / "replays").mkdir()
        (tmp_path / "replays" / "fare-class.yaml").write_text(script, encoding="utf-8")

    main_job = "mcp-hazard run scenarios/ --agent naive --agent recovering"
    reports: list[dict[str, Any]] = []  # the main job's, kept before the next run in its folder writes another
    with session(tmp_path, timeouts={main_job: 5 * WAIT_S}) as shell:  # 270 episodes: 38 s at load 8
        play(shell, to_run(DOC, "test_running_the_reference_agents_and_replaying_their_traces"), before={
            "mcp-hazard run scenarios/ --task travel/fare-class --agent recovering": lambda: reports.append(
                json.loads((tmp_path / "runs" / "matrix" / "report.json").read_text(encoding="utf-8"))),
            "mcp-hazard replay replays/fare-class.yaml": write_script,
        })  # fmt: skip
    # what README, research.md and scoring.md say of the main job is this run's
    (report,) = reports
    report = _undisturbed(report, tmp_path, main_job)
    (naive,) = [row for row in report["value_taxonomy"] if row["agent"] == "naive"]
    said = {
        "README.md": (r"About (\d+) episodes in well under a minute", (round(report["episodes"], -1),)),
        "docs/research.md": (r"naive: (\d+) classified calls in (\d+) failed episodes",
                             (naive["classified_calls"], naive["failed_episodes"])),
        "docs/scoring.md": (r'\("100\.0% of (\d+)", beside the agent\'s failed episodes, (\d+)\)',
                            (naive["classified_episodes"], naive["failed_episodes"])),
    }  # fmt: skip
    for doc, (sentence, figures) in said.items():
        found = re.search(sentence, (ROOT / doc).read_text(encoding="utf-8"))
        assert found is not None, (doc, sentence)
        assert tuple(int(figure) for figure in found.groups()) == figures, (doc, found[0], figures)


def _slowed(report: dict[str, Any]) -> list[str]:
    """Naive episodes whose call ran past the agent's 2-second call timeout with no `latency` hazard to delay it:
    the machine was too slow for that run (the test runs beside others), which cut the episode short. Their calls,
    and so the figures the docs quote, are then not what the command gives."""
    return [row["episode_id"] for row in report["per_episode"] if row["agent"] == "naive"
            and row["condition"] != "latency" and any("timed out" in note for note in row["notes"] or [])]  # fmt: skip


def _undisturbed(report: dict[str, Any], folder: Path, main_job: str) -> dict[str, Any]:
    """The main job's report, or, when the machine slowed that run (`_slowed`), the report of the same command run
    again (at most twice more) with nothing slowed; a failure when every run was."""
    slowed = _slowed(report)
    for attempt in range(2):
        if not slowed:
            return report
        out = f"runs/again-{attempt}"
        ran = run_main(*main_job.split()[1:], "--out", out, "--no-progress", cwd=folder)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        report = json.loads((folder / out / "report.json").read_text(encoding="utf-8"))
        slowed = _slowed(report)
    assert not slowed, f"every run of the main job was slowed past the naive agent's call timeout: {slowed}"
    return report


def _desktop_episode(shell: Session) -> None:
    """What Claude Desktop does with the doc's configuration: start the server it names, read the task, answer."""
    config = json.loads(block_text(DOC, '{\n  "mcpServers"').replace(HOME, str(shell.cwd)))
    server = config["mcpServers"]["hazard-travel"]
    params = StdioServerParameters(command=server["command"], args=server["args"], cwd="/", env=shell.env)
    anyio.run(_answer_fare_class, params)


async def _answer_fare_class(params: StdioServerParameters | str) -> None:
    with anyio.fail_after(WAIT_S):
        async with Client(params) as client:
            prompt = await client.get_prompt("task")
            assert "AU-426" in str(prompt.messages[0].content)
            for _ in range(5):  # the configuration injects transient errors
                fare = await client.call_tool("get_fare", {"flight_id": "AU-426"})
                if not fare.is_error:
                    break
            assert not fare.is_error
            await client.call_tool("submit_answer", {"answer": fare.structured_content["fare_class"]})


def test_your_own_agent_a_desktop_assistant_and_pytest(tmp_path: Path) -> None:
    """`--agent-cmd` with the doc's myagent.py (and with a program that does not exist), the desktop configurations
    and URL, and the pytest plugin with the doc's test file (with the pytest plugins a reader has: READERS_PYTEST).
    `$TOKEN` is set as README's HTTP section sets it."""
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    files = {
        "myagent.py": block_text(DOC, '"""A minimal external agent'),
        "tests/test_my_agent.py": block_text(DOC, "tests/test_my_agent.py"),
        "tests/conftest.py": block_text(DOC, "tests/conftest.py"),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    with (
        FakeLlm(scripts={PROMPT_KEY: SCRIPT}).in_thread() as fake,  # in place of the Ollama the frameworks' run names
        session(tmp_path, paths={HOME: str(tmp_path), OLLAMA: fake.base_url}, prelude=["export TOKEN=s3cret"],
                extra_env={"PYTEST_ADDOPTS": READERS_PYTEST}) as shell,
    ):  # fmt: skip
        play(shell, to_run(DOC, "test_your_own_agent_a_desktop_assistant_and_pytest"),
             before={f"mcp-hazard score {HOME}/runs/desktop": lambda: _desktop_episode(shell)})  # fmt: skip
        # the episode URL the doc gives an assistant that takes only a URL, against the doc's server
        url = block_text(DOC, "http://127.0.0.1:8765/episodes/attempt-1/").strip().replace("TOKEN", "s3cret")
        anyio.run(_answer_fare_class, shell.substitute(url))
    assert len(list((tmp_path / "runs" / "desktop").glob("*.jsonl"))) == 2
    # both framework programs solved fare-class, clean and under transient errors, with requests a strict server takes
    assert fake.problems == []
    rows = json.loads((tmp_path / "runs" / "frameworks" / "report.json").read_text(encoding="utf-8"))["per_episode"]
    assert sorted((row["agent"].split("-")[1], row["condition"], row["correct"]) for row in rows) == [
        (agent, condition, True) for agent in ("openai_agents_agent.py", "pydantic_ai_agent.py")
        for condition in ("clean", "transient_error")
    ], rows  # fmt: skip

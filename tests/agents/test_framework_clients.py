"""The agent-framework examples of clients/ (OpenAI Agents SDK, pydantic-ai) as docs/agents.md runs them:
`mcp-hazard run --agent-cmd 'python clients/...'`, each framework reaching its episode through its own MCP client and
its model through the strict fake OpenAI-compatible endpoint, which refuses what llama.cpp or vLLM would refuse.

docs/agents.md runs both over HTTP (tests/docs/test_agents_doc.py); here each runs over stdio, starting the episode's
server itself. The fake plays one script for travel/fare-class: three `get_fare` calls, then `submit_answer` (and a
last word, for a framework that asks the model again after the answer). Clean, the extra calls are harmless; under
seed 0's transient errors (two 503s) the third call is the one that succeeds, so both episodes are correct, the second
one with both errors recovered by retrying: only if the framework gave the model each error and let it call again.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.cli import main
from tests.runner.support import REPO_ROOT, TRAVEL, VENV_BIN, jsonl, no_traceback

from .fake_llm import FakeLlm, call, reply, tool_calls

pytestmark = pytest.mark.e2e

CLIENTS = REPO_ROOT / "clients"
PROMPT_KEY = "AU-426 sold in"  # in fare-class's prompt, and in no other task's
SCRIPT = [
    *(tool_calls(call("get_fare", {"flight_id": "AU-426"}, f"call_fare_{n}")) for n in (1, 2, 3)),
    tool_calls(call("submit_answer", {"answer": "Standard"}, "call_submit")),
    reply("Submitted."),
]


def installed(distribution: str) -> bool:
    """By distribution, not module: `agents` would also find this folder's own package (tests/agents)."""
    try:
        version(distribution)
    except PackageNotFoundError:
        return False
    return True


def needs(distribution: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not installed(distribution), reason=f"needs {distribution}: pip install -e '.[test]'")


def run_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], example: str, transport: str
) -> tuple[int, str, Path, FakeLlm]:
    """`mcp-hazard run` (in this process) with the example as `--agent-cmd`, against the fake endpoint."""
    out = tmp_path / "out"
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")  # `python` is this venv's
    for name in [n for n in os.environ if n.startswith("MCP_HAZARD_LLM_")]:  # the developer's settings stay out
        monkeypatch.delenv(name)
    with FakeLlm(scripts={PROMPT_KEY: SCRIPT}).in_thread() as fake:
        monkeypatch.setenv("MCP_HAZARD_LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("MCP_HAZARD_LLM_MODEL", "fake-model")
        code = main([
            "run", str(TRAVEL), "--task", "fare-class", "--hazard", "transient_error", "--transport", transport,
            "--agent-cmd", f"python {CLIENTS / example}", "--out", str(out), "--no-progress", "--timeout", "60",
        ])  # fmt: skip
    return code, capsys.readouterr().err, out, fake


def assert_solved_by_retrying(code: int, err: str, out: Path, fake: FakeLlm) -> None:
    logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted((out / "agent-logs").glob("*.log")))
    assert code == 0 and no_traceback(err), err + logs
    assert fake.problems == [], f"the framework sent a request a strict server refuses: {fake.problems}\n{logs}"
    rows = {row["condition"]: row for row in json.loads((out / "report.json").read_text())["per_episode"]}
    assert sorted(rows) == ["clean", "transient_error"], rows
    for row in rows.values():
        assert (row["correct"], row["answer"], row["agent_outcome"]) == (True, "Standard", "finished"), row
    hazards = rows["transient_error"]["hazards"]
    assert [(h["tool"], h["recovered"], h["path"]) for h in hazards] == [("get_fare", True, "retry")] * 2, hazards
    # The model saw each 503 as the text of a tool message, and the calls reached the server through MCP.
    tool_texts = [m["content"] for r in fake.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("503" in text for text in tool_texts), tool_texts
    trace = jsonl(Path(rows["transient_error"]["trace"]))
    assert [(e["type"], e.get("tool")) for e in trace if e["type"] in ("tool_called", "answer_submitted")] == [
        ("tool_called", "get_fare")] * 3 + [("answer_submitted", None)]  # fmt: skip
    assert {r["model"] for r in fake.requests} == {"fake-model"}
    assert all(isinstance(r.get("max_tokens"), int) for r in fake.requests)


@needs("openai-agents")
def test_the_openai_agents_sdk_example_over_stdio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SDK starts the episode's server itself (`MCPServerStdio`) and stops at `submit_answer`: no request after
    it (the script's last word is never asked for)."""
    code, err, out, fake = run_example(tmp_path, monkeypatch, capsys, "openai_agents_agent.py", "stdio")
    assert_solved_by_retrying(code, err, out, fake)
    assert len(fake.requests) == 2 * 4, [len(r["messages"]) for r in fake.requests]
    first: dict[str, Any] = fake.requests[0]
    assert first["messages"][0]["role"] == "system" and "submit_answer" in first["messages"][0]["content"]


@needs("pydantic-ai-slim")
def test_the_pydantic_ai_example_over_stdio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pydantic-ai's `MCPToolset` on FastMCP's stdio transport; after the answer it asks the model once more, and the
    run ends with the model's last word."""
    code, err, out, fake = run_example(tmp_path, monkeypatch, capsys, "pydantic_ai_agent.py", "stdio")
    assert_solved_by_retrying(code, err, out, fake)
    assert len(fake.requests) == 2 * 5, [len(r["messages"]) for r in fake.requests]
    logs = [p.read_text() for p in (out / "agent-logs").glob("*.log")]
    assert all("final output: Submitted." in log for log in logs), logs

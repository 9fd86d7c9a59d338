"""The MCP Inspector CLI (npm @modelcontextprotocol/inspector 2.12.0) as a third-party client, over stdio and HTTP.

Invocation, as found with `mcp-inspector --cli --help`:
    mcp-inspector --cli [options] [target...]
      target: a command line (stdio) or an http(s) URL; `--` ends the inspector's options, so the server's own flags
              (e.g. `--log-level`, which the inspector also has) cannot be taken for the inspector's
      --method tools/list | tools/call | prompts/get | ...     --tool-name NAME  --tool-arg k=v ...
      --tool-args-json '{"k": "v"}'                             --prompt-name NAME
      --protocol-era legacy | auto | modern  (ad-hoc targets default to legacy)
      --format json  (one JSON object on stdout: {"result": ...})   -q  (only the payload, or the error envelope)
    Exit codes (core/cli/error-handler.ts EXIT_CODES): 0 ok, 1 usage or JSON-RPC error, 4 unreachable,
    5 tool returned isError (stderr: {"error": {"code": "tool_is_error", ...}}).
    MCP_CATALOG_PATH and MCP_CLIENT_CONFIG_PATH locate its catalog and client config (set under tmp_path here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from conftest import WAIT_S

from mcp_hazard.load import load_scenario

from .support import LEGACY_PROTOCOL, MODERN_PROTOCOL, REPO_ROOT, TRAVEL, calls, wait_for_trace_end

if TYPE_CHECKING:
    from conftest import HttpServer

pytestmark = pytest.mark.e2e

TIMEOUT = WAIT_S
"""The inspector's connect timeout; the process itself gets twice that (the connection, then the calls), so a slow
connection fails with the inspector's own message, not a killed process."""
EXIT_OK, EXIT_RPC_ERROR, EXIT_TOOL_ERROR = 0, 1, 5
ERA_PROTOCOL = {"legacy": LEGACY_PROTOCOL, "modern": MODERN_PROTOCOL}


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        return dict(json.loads(self.stdout)["result"])

    @property
    def error(self) -> dict[str, Any]:
        return dict(json.loads(self.stderr.strip().splitlines()[-1])["error"])


def inspect(inspector: Path, env: dict[str, str], target: list[str], *options: str) -> Run:
    command = [
        str(inspector),
        "--cli",
        *options,
        "--connect-timeout",
        f"{TIMEOUT * 1000:.0f}",
        "--format",
        "json",
        "-q",
        "--",
        *target,
    ]
    done = subprocess.run(
        command, env=env, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=2 * TIMEOUT
    )
    return Run(done.returncode, done.stdout, done.stderr)


def stdio_target(trace_dir: Path, episode_id: str, task: str = "fare-in-dollars") -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcp_hazard",
        "serve",
        str(TRAVEL),
        "--task",
        task,
        "--seed",
        "3",
        "--trace-dir",
        str(trace_dir),
        "--episode-id",
        episode_id,
    ]


# -- stdio ------------------------------------------------------------------------------------------------------------


def test_inspector_lists_the_tools_over_stdio(
    inspector_bin: Path, inspector_env: dict[str, str], tmp_path: Path
) -> None:
    run = inspect(inspector_bin, inspector_env, stdio_target(tmp_path, "list"), "--method", "tools/list")
    assert run.code == EXIT_OK, run.stderr
    tools = {tool["name"]: tool for tool in run.result["tools"]}
    expected = [tool.name for tool in load_scenario(TRAVEL).model.tools] + ["submit_answer"]
    assert list(tools) == expected
    assert tools["get_fare"]["inputSchema"]["required"] == ["flight_id"]
    assert tools["get_fare"]["outputSchema"]["required"] == ["flight_id", "price_eur", "fare_class"]
    assert tools["submit_answer"]["inputSchema"]["required"] == ["answer"]
    events = wait_for_trace_end(tmp_path / "list.jsonl")
    assert events[0]["protocol_version"] == LEGACY_PROTOCOL
    assert "tools_listed" in [e["type"] for e in events]
    assert calls(events) == []
    assert events[-1]["reason"] == "disconnected"


def test_inspector_calls_get_fare_over_stdio(
    inspector_bin: Path, inspector_env: dict[str, str], tmp_path: Path
) -> None:
    run = inspect(
        inspector_bin,
        inspector_env,
        stdio_target(tmp_path, "fare"),
        "--method",
        "tools/call",
        "--tool-name",
        "get_fare",
        "--tool-arg",
        "flight_id=AU-412",
    )
    assert run.code == EXIT_OK, run.stderr
    assert run.result.get("isError") is not True
    assert run.result["structuredContent"] == {"flight_id": "AU-412", "price_eur": 189.0, "fare_class": "Flex"}
    assert "189" in run.result["content"][0]["text"]
    [call] = calls(wait_for_trace_end(tmp_path / "fare.jsonl"))
    assert (call["tool"], call["slot"], call["arguments"], call["outcome"]) == (
        "get_fare",
        1,
        {"flight_id": "AU-412"},
        "ok",
    )


@pytest.mark.parametrize(
    ("arguments", "needle", "outcome"),
    [
        pytest.param(["--tool-arg", "flight_id=AU-9"], "flight_id", "invalid_arguments", id="pattern"),
        pytest.param(["--tool-args-json", '{"flight_id": 412}'], "flight_id", "invalid_arguments", id="wrong-type"),
        pytest.param(["--tool-arg", "flight_id=AU-999"], "AU-999", "error", id="behaviour-error"),
    ],
)
def test_inspector_exits_5_on_an_iserror_result(
    inspector_bin: Path,
    inspector_env: dict[str, str],
    http_server: HttpServer,
    arguments: list[str],
    needle: str,
    outcome: str,
) -> None:
    """The inspector's exit code follows the result, whatever the transport: an episode of the shared HTTP server
    (no server process of its own; the stdio tests above prove that transport)."""
    created = _create(http_server, "fare-in-dollars", 3)
    run = inspect(
        inspector_bin, inspector_env, [created["mcp_url"]], "--method", "tools/call", "--tool-name", "get_fare",
        *arguments,
    )  # fmt: skip
    assert run.code == EXIT_TOOL_ERROR, (run.code, run.stdout, run.stderr)
    assert run.result["isError"] is True
    assert needle in run.result["content"][0]["text"]
    assert run.error["code"] == "tool_is_error"
    [call] = calls(json_lines(Path(created["trace"])))
    assert call["outcome"] == outcome


def test_inspector_exits_1_on_a_json_rpc_error(
    inspector_bin: Path, inspector_env: dict[str, str], http_server: HttpServer
) -> None:
    created = _create(http_server, "fare-in-dollars", 3)
    url = created["mcp_url"]
    run = inspect(inspector_bin, inspector_env, [url], "--method", "prompts/get", "--prompt-name", "nope")
    assert run.code == EXIT_RPC_ERROR, (run.code, run.stdout, run.stderr)
    assert "nope" in run.error["message"]


def test_inspector_reads_the_task_and_submits_an_answer_over_stdio(
    inspector_bin: Path, inspector_env: dict[str, str], tmp_path: Path
) -> None:
    prompt = inspect(
        inspector_bin,
        inspector_env,
        stdio_target(tmp_path, "prompt", "fare-class"),
        "--method",
        "prompts/get",
        "--prompt-name",
        "task",
    )
    assert prompt.code == EXIT_OK, prompt.stderr
    assert "AU-426" in prompt.result["messages"][0]["content"]["text"]
    answer = inspect(
        inspector_bin,
        inspector_env,
        stdio_target(tmp_path, "answer", "fare-class"),
        "--method",
        "tools/call",
        "--tool-name",
        "submit_answer",
        "--tool-args-json",
        '{"answer": "Standard"}',
    )
    assert answer.code == EXIT_OK, answer.stderr
    events = wait_for_trace_end(tmp_path / "answer.jsonl")
    assert [e["answer"] for e in events if e["type"] == "answer_submitted"] == ["Standard"]
    assert events[-1]["reason"] == "answered"


# -- HTTP, both protocol eras -----------------------------------------------------------------------------------------


def _create(server: HttpServer, task: str, seed: int) -> dict[str, Any]:
    body = {"scenario": "travel", "task": task, "seed": seed}
    response = httpx.post(f"{server.base_url}/episodes", json=body, headers=server.auth)
    assert response.status_code == 201, response.text
    created = dict(response.json())
    assert "trace" not in created and "condition" not in created  # agent-facing: no trace path, no condition
    return {**created, "trace": str(server.trace_dir / f"{created['episode_id']}.jsonl")}


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_over_http_in_both_eras(
    inspector_bin: Path, inspector_env: dict[str, str], http_server: HttpServer, era: str
) -> None:
    created = _create(http_server, "fare-class", 21)
    url = created["mcp_url"]
    listed = inspect(inspector_bin, inspector_env, [url], "--protocol-era", era, "--method", "tools/list")
    assert listed.code == EXIT_OK, listed.stderr
    assert "get_fare" in {tool["name"] for tool in listed.result["tools"]}
    fare = inspect(
        inspector_bin,
        inspector_env,
        [url],
        "--protocol-era",
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "get_fare",
        "--tool-arg",
        "flight_id=AU-426",
    )
    assert fare.code == EXIT_OK, fare.stderr
    assert fare.result["structuredContent"]["fare_class"] == "Standard"
    bad = inspect(
        inspector_bin,
        inspector_env,
        [url],
        "--protocol-era",
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "get_fare",
        "--tool-arg",
        "flight_id=426",
    )
    assert bad.code == EXIT_TOOL_ERROR, (bad.code, bad.stdout, bad.stderr)
    answer = inspect(
        inspector_bin,
        inspector_env,
        [url],
        "--protocol-era",
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "submit_answer",
        "--tool-arg",
        "answer=Standard",
    )
    assert answer.code == EXIT_OK, answer.stderr
    events = wait_for_trace_end(Path(created["trace"]))
    # one episode across four inspector processes: the episode is the URL, in both eras
    assert events[0]["protocol_version"] == ERA_PROTOCOL[era]
    assert [(c["tool"], c["slot"], c["outcome"]) for c in calls(events)] == [
        ("get_fare", 1, "ok"),
        ("get_fare", 2, "invalid_arguments"),
    ]
    assert [e["answer"] for e in events if e["type"] == "answer_submitted"] == ["Standard"]
    assert events[-1]["reason"] == "answered"


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_creates_an_episode_lazily_from_the_url(
    inspector_bin: Path, inspector_env: dict[str, str], http_server: HttpServer, era: str
) -> None:
    episode_id = f"inspector-lazy-{era}"
    url = http_server.lazy_url(episode_id, "scenario=travel&task=fare-in-dollars&seed=8")  # the token in the query
    run = inspect(
        inspector_bin,
        inspector_env,
        [url],
        "--protocol-era",
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "convert_currency",
        "--tool-args-json",
        '{"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}',
    )
    assert run.code == EXIT_OK, run.stderr
    assert run.result["structuredContent"] == {"amount": 204.59, "currency": "USD"}
    shown = httpx.get(f"{http_server.base_url}/episodes/{episode_id}", headers=http_server.auth).json()
    assert shown["task"] == "fare-in-dollars" and "condition" not in shown
    started, *_ = json_lines(http_server.trace_dir / f"{episode_id}.jsonl")
    assert started["condition"]["seed"] == 8
    [call] = calls(json_lines(http_server.trace_dir / f"{episode_id}.jsonl"))
    assert call["outcome"] == "ok"


def json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

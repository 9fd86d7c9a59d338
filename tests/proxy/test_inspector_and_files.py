"""The MCP Inspector CLI (a third-party client) through the proxy over stdio and HTTP; proxy files checked with
file:line:column, alone and against the server; `schema proxy`; servers that cannot be reached."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO_ROOT, WAIT_S, CliRun, HttpServer, hazard_command, run_main, start_http_server

from .support import PROXIES, events

pytestmark = pytest.mark.e2e

TIMEOUT = 2 * WAIT_S  # the inspector's own connect timeout is WAIT_S: the process gets it and the calls after it


def _inspect(
    inspector: Path, env: dict[str, str], target: list[str], *options: str
) -> subprocess.CompletedProcess[str]:
    command = [str(inspector), "--cli", *options, f"--connect-timeout={WAIT_S * 1000:.0f}", "--format", "json", "-q",
               "--", *target]  # fmt: skip
    return subprocess.run(command, env=env, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=TIMEOUT)  # fmt: skip


def test_the_inspector_cli_lists_and_calls_through_a_stdio_proxy(
    tmp_path: Path, inspector_bin: Path, inspector_env: dict[str, str], time_server: str
) -> None:
    target = [*hazard_command("proxy", str(PROXIES / "time.yaml"), "--upstream-cmd", time_server, "--trace-dir",
                              str(tmp_path))]  # fmt: skip
    listed = _inspect(inspector_bin, inspector_env, target, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    names = [t["name"] for t in json.loads(listed.stdout)["result"]["tools"]]
    assert names == ["get_current_time", "convert_time", "submit_answer"]
    call = ["--method", "tools/call", "--tool-name", "convert_time", "--tool-arg", "source_timezone=Etc/UTC",
            "--tool-arg", "time=12:00", "--tool-arg", "target_timezone=Asia/Tokyo"]  # fmt: skip
    clean = _inspect(inspector_bin, inspector_env, target, *call)
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout)["result"]["structuredContent"]["time_difference"] == "+9.0h"
    failing = _inspect(inspector_bin, inspector_env, [*target, "--hazard", "transient_error"], *call)
    assert failing.returncode == 5, failing.stderr  # the injected 503 is an isError result to the inspector
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert len(traces) == 3
    outcomes = sorted(e["outcome"] for t in traces for e in events(t) if e["type"] == "tool_called")
    assert outcomes == ["ok", "rejected"]


@pytest.fixture(scope="module")
def http_proxy(tmp_path_factory: pytest.TempPathFactory, time_server: str) -> Iterator[tuple[HttpServer, Path]]:
    """One HTTP proxy before the time server for both eras: each era's Inspector call is an episode of its own."""
    folder = tmp_path_factory.mktemp("inspector-http")
    served = ("proxy", str(PROXIES / "time.yaml"), "--upstream-cmd", time_server, "--hazard", "output_drift")
    proxy = start_http_server(folder / "traces", folder, served=served)
    try:
        yield proxy, folder / "traces"
    finally:
        proxy.stop()


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_inspector_cli_calls_through_an_http_proxy(
    http_proxy: tuple[HttpServer, Path], inspector_bin: Path, inspector_env: dict[str, str], era: str
) -> None:
    proxy, traces = http_proxy
    url = proxy.lazy_url(f"insp-{era}", "task=tokyo-time")  # created on first use: the token in the query
    call = [
        "--method", "tools/call", "--tool-name", "convert_time", "--tool-arg", "source_timezone=Etc/UTC",
        "--tool-arg", "time=14:30", "--tool-arg", "target_timezone=Asia/Tokyo", "--protocol-era", era,
    ]  # fmt: skip
    done = _inspect(inspector_bin, inspector_env, [url], *call)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert "structuredContent" not in result  # output drift serves text only
    assert "23:30" in result["content"][0]["text"]
    trace = events(traces / f"insp-{era}.jsonl")
    assert [e["kind"] for e in trace if e["type"] == "hazard_fired"] == ["output_drift"]


def _cli(*args: str) -> CliRun:
    """A proxy command that refuses, or prints a schema, run in this process (the process boundary is not what these
    tests are about; the Inspector tests above go through the real program)."""
    return run_main(*args, cwd=REPO_ROOT)


def test_a_proxy_file_is_checked_alone_with_file_line_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "format: 1\nkind: proxy\nid: bad\ntitle: Bad\nupstream:\n  command: x\n  url: http://127.0.0.1:1/mcp\n"
        "tools:\n  convert_time:\n    retry_safe: maybe\ntasks:\n  - id: t1\n    prompt: hello\n    colour: blue\n",
        encoding="utf-8",
    )
    done = _cli("proxy", str(bad))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"{bad}:6:3: upstream: give exactly one of 'command' or 'url'",
        f'{bad}:10:17: tools.convert_time.retry_safe: Input should be a valid boolean, got "maybe"',
        f"{bad}:14:5: tasks[0].colour: unknown key 'colour'",
    ]


def test_a_proxy_file_is_checked_against_the_servers_tools(tmp_path: Path, time_server: str) -> None:
    bad = tmp_path / "names.yaml"
    bad.write_text(
        "format: 1\nkind: proxy\nid: names\ntitle: Names\ntools:\n  convert_tim:\n    fields: [x]\n"
        "  convert_time:\n    fallbacks: [{tool: get_time}]\n",
        encoding="utf-8",
    )
    done = _cli("proxy", str(bad), "--upstream-cmd", time_server, "--trace-dir", str(tmp_path))
    listed = "it lists: get_current_time, convert_time"
    assert done.stderr.splitlines() == [
        f"{bad}:6:3: tools.convert_tim: the upstream server (mcp-time {_version()}) lists no tool 'convert_tim'; "
        f"{listed}",
        f"{bad}:9:24: tools.convert_time.fallbacks[0].tool: the upstream server (mcp-time {_version()}) lists no tool "
        f"'get_time'; {listed}",
    ]


def _version() -> str:
    from importlib.metadata import version

    return version("mcp-server-time")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--upstream-cmd", "no-such-server --flag"], "cannot reach the upstream server (no-such-server --flag)"),
        (["--upstream-cmd", f"{sys.executable} -c 'raise SystemExit(3)'"], "cannot reach the upstream server"),
        (["--upstream-url", "http://127.0.0.1:9/mcp"], "cannot reach the upstream server (http://127.0.0.1:9/mcp)"),
        ([], "no upstream server: give --upstream-cmd"),
        (["--upstream-cmd", "x", "--replay", "c.jsonl"], "give one of --upstream-cmd, --replay, not several"),
        (["--replay", "missing.jsonl"], "missing.jsonl: cannot read cassette"),
    ],
)
def test_a_server_that_cannot_be_reached_is_one_line(tmp_path: Path, args: list[str], said: str) -> None:
    done = _cli("proxy", *args, "--trace-dir", str(tmp_path))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_schema_proxy_describes_the_shipped_proxy_files() -> None:
    import yaml

    done = _cli("schema", "proxy")
    assert done.returncode == 0
    schema = json.loads(done.stdout)
    assert schema["title"] == "mcp-hazard proxy file"
    shipped = sorted(PROXIES.glob("*.yaml"))
    assert [p.name for p in shipped] == ["everything.yaml", "filesystem.yaml", "time.yaml"]
    for path in shipped:
        jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kind": "proxy", "id": "x", "title": "t", "tools": {"a": {"retry_safe": 1}}}, schema)

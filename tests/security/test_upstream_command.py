"""A proxy file may come from a stranger, and its `upstream.command` is a program to run: `proxy` and `run` start it
only with `--allow-upstream-command` (as a scenario's code runs only with `--allow-python`). Without the flag: one
line naming the command, where the file says it and the flag; exit 2; nothing started. A command the user gives with
`--upstream-cmd`, or a cassette, needs no flag."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import REPO_ROOT, CliRun, run_main
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.e2e.support import console_script

pytestmark = pytest.mark.e2e

HOSTILE = Path(__file__).with_name("hostile_upstream.py")
GUARD_S = 120.0


def stranger_file(tmp_path: Path) -> tuple[Path, list[str]]:
    """A proxy file whose server writes a marker file when it starts; the file and that command."""
    command = [sys.executable, str(HOSTILE), "--pid-file", str(tmp_path / "started")]
    path = tmp_path / "stranger.yaml"
    path.write_text(
        "format: 1\nkind: proxy\nid: stranger\ntitle: A proxy file from a stranger\nupstream:\n"
        f"  command: [{', '.join(json.dumps(word) for word in command)}]\n"
        "tools:\n  echo: {retry_safe: true}\n"
        "tasks:\n  - id: say-hi\n    prompt: Call echo with the text hi and answer with what it says.\n"
        "    answer: {value: hi}\n    golden_path:\n      steps: [{id: e, tool: echo, arguments: {text: hi}}]\n"
        '      answer: "{{ e }}"\n',
        encoding="utf-8",
    )
    return path, command


def cli(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=GUARD_S)  # fmt: skip


def in_process(*args: str) -> CliRun:
    """`cli` through `main()` in this process, for a command whose subject is what it says and starts, not the process:
    stdin is the null device, so a stdio proxy or a run that should have refused ends at once rather than hanging."""
    return run_main(*args, cwd=REPO_ROOT)


@pytest.mark.parametrize(
    "how", [["proxy"], ["proxy", "--http", "127.0.0.1:0"], ["run", "--transport", "memory", "--agent", "naive"]]
)
def test_a_proxy_files_command_runs_only_with_the_flag(tmp_path: Path, how: list[str]) -> None:
    path, command = stranger_file(tmp_path)
    out = tmp_path / "matrix"
    # Over HTTP, a proxy that failed to refuse would serve until killed: that one is a process of its own.
    runner = cli if "--http" in how else in_process
    done = runner(how[0], str(path), *how[1:], *(["--out", str(out)] if how[0] == "run" else []))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line == (
        f"{path}:6:12: upstream.command: would run {shlex.join(command)!r}; a command from a file runs only with "
        "--allow-upstream-command (or give it yourself with --upstream-cmd)"
    )
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not (tmp_path / "started").exists(), "the file's command ran"
    assert not out.exists()


def _list_tools(*args: str) -> list[str]:
    params = StdioServerParameters(command=console_script(), args=list(args), cwd=str(REPO_ROOT))

    async def run() -> list[str]:
        with anyio.fail_after(GUARD_S):
            async with Client(params) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    return anyio.run(run)


def test_with_the_flag_or_a_command_line_command_the_proxy_serves(tmp_path: Path) -> None:
    path, command = stranger_file(tmp_path)
    traces = str(tmp_path / "traces")
    assert "echo" in _list_tools("proxy", str(path), "--allow-upstream-command", "--trace-dir", traces)
    assert (tmp_path / "started").exists()
    (tmp_path / "started").unlink()
    given = _list_tools("proxy", str(path), "--upstream-cmd", shlex.join(command), "--trace-dir", traces)
    assert "echo" in given and "submit_answer" in given
    assert (tmp_path / "started").exists()


def test_run_hands_the_flag_to_each_stdio_episode_and_a_replay_needs_none(tmp_path: Path) -> None:
    path, _command = stranger_file(tmp_path)
    cassette = tmp_path / "stranger.cassette.jsonl"
    common = ["--agent", "recovering", "--seeds", "0", "--hazard", "transient_error", "--no-progress"]
    recorded = in_process("run", str(path), "--allow-upstream-command", "--upstream-timeout", "30", "--transport",
                          "stdio", "--record", str(cassette), "--out", str(tmp_path / "live"), *common)  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    assert "Traceback" not in recorded.stderr
    (tmp_path / "started").unlink()
    replayed = in_process("run", str(path), "--replay", str(cassette), "--transport", "memory", "--out",
                          str(tmp_path / "replayed"), *common)  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert not (tmp_path / "started").exists(), "a replay ran the file's command"
    for folder in ("live", "replayed"):
        traces = sorted((tmp_path / folder / "traces").glob("*.jsonl"))
        assert len(traces) == 2, traces  # clean and transient_error
        for trace in traces:
            events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
            answered = [e for e in events if e["type"] == "answer_submitted"]
            assert answered and answered[-1]["answer"] == "hi", events


def test_the_files_timeout_applies_and_the_command_lines_wins(tmp_path: Path) -> None:
    path, _command = stranger_file(tmp_path)
    path.write_text(path.read_text().replace("tools:\n", "  timeout: 2\ntools:\n"), encoding="utf-8")
    params = StdioServerParameters(command=console_script(), cwd=str(REPO_ROOT), args=[
        "proxy", str(path), "--allow-upstream-command", "--trace-dir", str(tmp_path / "traces")])  # fmt: skip

    async def hang(*extra: str) -> str:
        with anyio.fail_after(GUARD_S):
            async with Client(params.model_copy(update={"args": [*params.args, *extra]})) as client:
                try:
                    await client.call_tool("hang", {})
                except MCPError as exc:
                    return exc.error.message
        raise AssertionError("a hung call was answered")

    assert anyio.run(hang) == "the upstream server did not answer tools/call within 2 s (--upstream-timeout)"
    assert anyio.run(hang, "--upstream-timeout", "1.5").endswith("within 1.5 s (--upstream-timeout)")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("tools:\n", "  timeout: -1\ntools:\n"), ":7:12: upstream.timeout: Input should be greater than 0"),
        (("tools:\n", "  timeout: soon\ntools:\n"), ":7:12: upstream.timeout: Input should be a valid number"),
    ],
)
def test_a_bad_timeout_is_one_line(tmp_path: Path, change: tuple[str, str], said: str) -> None:
    path, _command = stranger_file(tmp_path)
    path.write_text(path.read_text().replace(*change), encoding="utf-8")
    done = in_process("proxy", str(path), "--allow-upstream-command")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and said in done.stderr, done.stderr
    flag = in_process("proxy", str(path), "--upstream-timeout", "0")
    assert flag.returncode == 2 and "must be between 0 and 86400 seconds, got 0" in flag.stderr, flag.stderr
    assert not (tmp_path / "started").exists()

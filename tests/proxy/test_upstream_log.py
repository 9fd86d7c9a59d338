"""The real server's stderr in proxy mode. `run` keeps it out of the terminal, in RUN/upstream.log, says where in one
line at the end and prints it with --verbose; a server that fails to start is one line naming the log and quoting its
last line. `proxy` (interactive, stdio) passes it through to its own stderr, which a desktop client keeps as the
server's log, or appends it to `--upstream-log FILE`. Real servers: the npm filesystem server (two lines on stderr per
start) and the Python time server behind a shell that writes a line first."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import anyio
import pytest
from conftest import REPO_ROOT, run_main
from mcp import Client
from mcp.client.stdio import stdio_client

from .support import PROXIES, proxy_params

pytestmark = pytest.mark.e2e

BANNER = "Secure MCP Filesystem Server running on stdio"


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_run_keeps_the_servers_stderr_in_the_run_folder_and_says_where(
    tmp_path: Path, npm_servers: dict[str, Path], fs_root: Path, transport: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Both runs go through `main()`; what the servers would write to this process's own stderr or stdout (file
    descriptors 1 and 2, which they inherit) is captured too, so a server line let through still shows."""
    out = tmp_path / "run"
    log = out / "upstream.log"
    command = [str(PROXIES / "filesystem.yaml"), "--upstream-cmd", f"{npm_servers['filesystem']} {fs_root}",
               "--task", "apples", "--agent", "naive", "--hazard", "transient_error", "--transport", transport,
               "--out", str(out), "--no-progress"]  # fmt: skip
    done = run_main("run", *command, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    leaked = capfd.readouterr()
    assert BANNER not in done.stderr + leaked.err and BANNER not in done.stdout + leaked.out, done.stderr
    lines = log.read_text(encoding="utf-8").splitlines()
    # one start to read the tools, then one per episode (over stdio, each episode's proxy reads them again)
    assert lines.count(BANNER) >= 3, lines
    said = f"Upstream server's stderr: {log} ({len(lines)} lines from this run; --verbose prints them)"
    assert said in done.stdout.splitlines(), done.stdout

    # The same command again, with --verbose: every episode is done, so only the first start speaks; its lines are
    # appended, counted as this run's, and printed (by the run itself: in this process, with its output captured).
    again = run_main("run", *command, "--verbose", cwd=REPO_ROOT)
    assert again.returncode == 0, again.stderr
    added = log.read_text(encoding="utf-8").splitlines()[len(lines) :]
    assert added and BANNER in added, added
    assert f"Upstream server's stderr: {log} ({len(added)} lines from this run)" in again.stdout.splitlines()
    shown = again.stderr.splitlines()
    heading = shown.index(f"mcp-hazard: the upstream server's stderr ({log}):")
    assert shown[heading + 1 : heading + 1 + len(added)] == added, again.stderr


def test_a_server_that_fails_to_start_is_one_line_naming_its_log_and_last_words(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Through `main()`, with what the server would write to the inherited file descriptors captured too."""
    out = tmp_path / "run"
    script = "import sys; print('starting up', file=sys.stderr); print('fatal: no tz database', file=sys.stderr); " \
             "sys.exit(3)"  # fmt: skip
    done = run_main("run", str(PROXIES / "time.yaml"), "--upstream-cmd", shlex.join([sys.executable, "-c", script]),
                    "--agent", "naive", "--out", str(out), "--no-progress", cwd=REPO_ROOT)  # fmt: skip
    leaked = capfd.readouterr()
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and leaked.out == "" and leaked.err == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("mcp-hazard: error: cannot reach the upstream server ("), line
    assert line.endswith(f"; its stderr is in {out / 'upstream.log'}, last line: fatal: no tz database"), line
    assert (out / "upstream.log").read_text(encoding="utf-8") == "starting up\nfatal: no tz database\n"


@pytest.mark.anyio
@pytest.mark.parametrize("kept", [False, True], ids=["passed-through", "upstream-log"])
async def test_the_interactive_proxy_passes_stderr_through_or_keeps_it_in_a_file(
    tmp_path: Path, time_server: str, kept: bool
) -> None:
    upstream = f"sh -c {shlex.quote(f'echo hello from the time server >&2; exec {time_server}')}"
    log = tmp_path / "upstream.log"
    params = proxy_params(str(PROXIES / "time.yaml"), "--upstream-cmd", upstream, "--trace-dir", str(tmp_path),
                          *(["--upstream-log", str(log)] if kept else []))  # fmt: skip
    stderr_path = tmp_path / "proxy.stderr"
    with stderr_path.open("w", encoding="utf-8") as errlog, anyio.fail_after(60):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = await client.list_tools()
            result = await client.call_tool("convert_time", {"source_timezone": "Etc/UTC", "time": "12:00",
                                                             "target_timezone": "Asia/Tokyo"})  # fmt: skip
    assert "convert_time" in [tool.name for tool in tools.tools]
    assert result.is_error is not True
    said = stderr_path.read_text(encoding="utf-8")
    assert ("hello from the time server" in said) is not kept, said
    if kept:
        assert log.read_text(encoding="utf-8").count("hello from the time server") >= 1
    assert "Traceback" not in said

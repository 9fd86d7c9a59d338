"""Item: a scenario file from a stranger reads, fetches and exhausts nothing. `$ref` in its schemas is local only and
the validator never retrieves; the YAML loader refuses what would crash or stall it. Every attack goes through the
real `mcp-hazard validate` / `serve` / `proxy` subprocess: one line `file:line:column: field: message` (or
`file: message` where a file has no position), exit 2, no traceback, within a generous deadline and memory ceiling."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from conftest import REPO_ROOT, WAIT_S, hazard_command, run_main, start_http_server
from mcp import Client

from mcp_hazard.scenario.yaml_source import MAX_FILE_BYTES, MAX_NODES, MAX_SCALAR_CHARS
from tests.proxy.support import made_once

from .support import high_water_kib

pytestmark = pytest.mark.e2e

DEADLINE = WAIT_S  # a guard against a hang on a busy machine, not a timing assertion: each run takes about a second
RSS_CEILING_MIB = 400  # a guard: validate peaks near 60 MiB on these files, 230 MiB on a 2 MiB file before the limits
PROBLEM = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:(?P<path>[^\s:]+): )?(?P<msg>\S.*)$")
NO_POSITION = re.compile(r"^(?P<file>[^:\n]+): (?P<msg>\S.*)$")

SCENARIO = """\
format: 1
id: refs
title: Refs
tools:
  - name: probe
    description: Echo a word.
    input_schema:
      type: object
      properties:
        word: {$ref: "REF"}
      required: [word]
      $defs:
        word: {type: string}
    behaviour:
      kind: compute
      result: {echo: "{{ word }}"}
tasks:
  - id: echo
    prompt: Echo the word aaa.
    answer: {value: aaa}
    workflow: sequential
    golden_path:
      steps:
        - {id: p, tool: probe, arguments: {word: aaa}}
      answer: "{{ p.echo }}"
"""
REF_LINE, REF_COLUMN = 10, 22


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text('{"const": "TOP-SECRET-123"}', encoding="utf-8")
    return path


@contextmanager
def listener() -> Iterator[tuple[int, threading.Event]]:
    """A TCP port on 127.0.0.1 that records whether anyone connected, and never answers (a fetch would stall)."""
    contacted, stop = threading.Event(), threading.Event()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    held: list[socket.socket] = []

    def watch() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue
            contacted.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], contacted
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        server.close()


def run_cli(*args: str) -> tuple[int, str, float, float]:
    """Exit code, stdout + stderr, wall seconds and peak RSS (MiB) of one `mcp-hazard ARGS...` run, killed at the
    deadline (a hang is a failure, never a stuck test)."""
    started = time.monotonic()
    peak_kib = 0
    with tempfile.TemporaryFile() as out, open(os.devnull, "rb") as stdin:
        child = subprocess.Popen(hazard_command(*args), cwd=REPO_ROOT, stdin=stdin, stdout=out, stderr=out)
        while True:
            peak_kib = max(peak_kib, high_water_kib(child.pid))
            pid, status, _ = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > DEADLINE:
                child.kill()
                os.wait4(child.pid, 0)
                raise AssertionError(f"`mcp-hazard {' '.join(args)}` did not finish within {DEADLINE} s")
            time.sleep(0.02)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read().decode("utf-8", "replace")
    return child.returncode, output, time.monotonic() - started, peak_kib / 1024


def in_process(*args: str) -> tuple[int, str, float, float | None]:
    """`run_cli` through `main()` in this process, for a refusal whose subject is what the loader says, not the
    process (no Python start-up and SDK imports per command); the peak RSS is the test run's, so it is not given."""
    started = time.monotonic()
    done = run_main(*args, cwd=REPO_ROOT, together=True)
    return done.returncode, done.stdout, time.monotonic() - started, None


def refused_once(done: tuple[int, str, float, float | None], file: Path, *, position: bool = True) -> re.Match[str]:
    """The run exited 2 with exactly one line, about `file`, no traceback, within the guards (the RSS one where the
    run was a process of its own); the line's match."""
    code, output, seconds, rss = done
    assert code == 2, output
    assert "Traceback" not in output and "Error" not in output, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    match = (PROBLEM if position else NO_POSITION).match(lines[0])
    assert match is not None, lines[0]
    assert match["file"] == str(file), lines[0]
    assert seconds < DEADLINE and (rss is None or rss < RSS_CEILING_MIB), (seconds, rss)
    return match


def write(tmp_path: Path, text: str, name: str = "hostile.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- $ref --------------------------------------------------------------------------------------------------------------


def test_a_file_ref_is_refused_and_the_file_never_reaches_any_output(tmp_path: Path, secret: Path) -> None:
    path = write(tmp_path, SCENARIO.replace("REF", secret.as_uri()))
    for args in (("validate", str(path)), ("serve", str(path), "--trace-dir", str(tmp_path / "traces"))):
        match = refused_once(in_process(*args), path)  # all it writes, stdout and stderr, is what is searched
        assert (int(match["line"]), int(match["col"])) == (REF_LINE, REF_COLUMN)
        assert match["path"] == "tools[0].input_schema.properties.word.$ref"
        assert "only local refs" in match["msg"] and "TOP-SECRET" not in match[0]
    assert not (tmp_path / "traces").exists() or not any((tmp_path / "traces").iterdir())


def test_an_http_ref_is_refused_without_a_request(tmp_path: Path) -> None:
    with listener() as (port, contacted):
        path = write(tmp_path, SCENARIO.replace("REF", f"http://127.0.0.1:{port}/schema.json"))
        for args in (("validate", str(path)), ("serve", str(path), "--trace-dir", str(tmp_path / "traces"))):
            match = refused_once(run_cli(*args), path)
            assert match["path"] == "tools[0].input_schema.properties.word.$ref" and "only local refs" in match["msg"]
        time.sleep(0.3)  # a connection made just before exit would show up by now
        assert not contacted.is_set(), "the listener was contacted"


def test_file_etc_passwd_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, SCENARIO.replace("REF", "file:///etc/passwd"))
    match = refused_once(in_process("validate", str(path)), path)
    assert "only local refs" in match["msg"] and "root:" not in match[0]


def test_a_defs_loop_is_refused_at_load(tmp_path: Path) -> None:
    text = SCENARIO.replace("REF", "#/$defs/word").replace("word: {type: string}", "word: {$ref: '#/$defs/word'}")
    path = write(tmp_path, text)
    for args in (("validate", str(path)), ("serve", str(path), "--trace-dir", str(tmp_path / "traces"))):
        match = refused_once(in_process(*args), path)  # a loop followed would end in RecursionError, not a hang
        assert match["path"] == "tools[0].input_schema.$defs.word.$ref" and "cycle" in match["msg"]


UPSTREAM = """\
import anyio, sys
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMAS = {
    "fetching": {"type": "object", "properties": {"word": {"$ref": sys.argv[1]}}},
    "reading": {"type": "object", "properties": {"word": {"$ref": sys.argv[2]}}},
    "looping": {"type": "object", "properties": {"word": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/a"}}},
    "plain": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
}


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name=name, description=f"{name} tool", input_schema=schema, annotations=types.ToolAnnotations(
            read_only_hint=True)) for name, schema in SCHEMAS.items()])


async def call_tool(ctx, params):
    refused = params.name != "plain"  # a refusal makes the proxy ask the listed schema whether the agent was at fault
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}: bad word")],
                                is_error=refused)


async def main():
    server = Server("refs-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""
PROXY_FILE = """\
format: 1
kind: proxy
id: refs-upstream
title: An upstream server whose tool schemas hold remote refs
"""


@pytest.mark.anyio
async def test_an_upstream_schema_with_remote_refs_never_makes_the_proxy_fetch(tmp_path: Path, secret: Path) -> None:
    """Proxy mode: the server's own tool schemas are never checked at load, so the validator itself must refuse to
    retrieve. Episode A calls tools whose `inputSchema` refs a silent HTTP port, a secret file and a `$defs` loop;
    the server refuses each call, so the proxy checks the arguments against that schema to tell whose fault it was.
    Nothing is fetched (before the fix: a GET that never returned, and a server that no longer stopped on SIGTERM)
    or read, the refusal reaches the agent, the trace records each call, and episode B keeps answering meanwhile."""
    script = write(tmp_path, UPSTREAM, "upstream.py")
    proxy_file = write(tmp_path, PROXY_FILE, "proxy.yaml")
    with listener() as (port, contacted):
        upstream = f"{sys.executable} {script} http://127.0.0.1:{port}/schema.json {secret.as_uri()}"
        served = ("proxy", str(proxy_file), "--upstream-cmd", upstream)
        server = start_http_server(tmp_path / "traces", tmp_path / "logs", served=served)
        texts: list[str] = []
        try:
            with anyio.fail_after(DEADLINE):
                async with httpx.AsyncClient(timeout=30) as http:
                    urls = []
                    for name in ("a", "b"):
                        created = await http.post(
                            f"{server.base_url}/episodes", json={"episode_id": name}, headers=server.auth
                        )
                        assert created.status_code == 201, created.text
                        urls.append(created.json()["mcp_url"])
                async with Client(urls[0], mode="legacy") as a, Client(urls[1], mode="legacy") as b:
                    answered_b = 0
                    for tool in ("fetching", "reading", "looping"):
                        result = await a.call_tool(tool, {"word": "aaa"})
                        assert result.is_error, (tool, result)
                        texts.append(str(result.content[0].text))  # type: ignore[union-attr]
                        listed = await b.list_tools()
                        assert "plain" in [t.name for t in listed.tools]
                        echoed = await b.call_tool("plain", {"word": "b"})
                        assert echoed.is_error is not True
                        answered_b += 1
                    assert answered_b == 3
                    fine = await a.call_tool("plain", {"word": "a"})
                    assert fine.is_error is not True
        finally:
            server.stop()
        time.sleep(0.3)
        assert not contacted.is_set(), "the proxy fetched a remote $ref"
    trace = (tmp_path / "traces" / "a.jsonl").read_text(encoding="utf-8")
    everything = "\n".join(texts) + server.stderr() + trace + (tmp_path / "traces" / "b.jsonl").read_text("utf-8")
    assert "TOP-SECRET" not in everything
    calls = [json.loads(line) for line in trace.splitlines() if '"tool_called"' in line]
    assert [call["tool"] for call in calls] == ["fetching", "reading", "looping", "plain"]
    assert [call["outcome"] for call in calls] == ["invalid_arguments"] * 3 + ["ok"]
    assert "Traceback" not in server.stderr(), server.stderr()


# -- the YAML loader ---------------------------------------------------------------------------------------------------

HEAD = "format: 1\nid: "


YAML_VALUES = [
    pytest.param(HEAD + "1:" * 300_000 + "1\n", 2, 5, f"the limit is {MAX_SCALAR_CHARS}", True, id="base60-300k-parts"),
    pytest.param(HEAD + "1:30\n", 2, 5, "base-60", False, id="base60-int"),
    pytest.param(HEAD + "1:" * 30_000 + "1.5\n", 2, 5, "base-60", True, id="base60-float-overflow"),
    pytest.param(HEAD + "!!int abc\n", 2, 5, "not an integer", False, id="int-tag-abc"),
    pytest.param(HEAD + "!!float abc\n", 2, 5, "not a number", False, id="float-tag-abc"),
    pytest.param(HEAD + "!!bool abc\n", 2, 5, "not a boolean", False, id="bool-tag-abc"),
    pytest.param(HEAD + "9" * 5000 + "\n", 2, 5, "integers", True, id="5000-digits"),
    pytest.param(HEAD + "0x" + "f" * 5000 + "\n", 2, 5, "integers", True, id="5000-hex-digits"),
    pytest.param(HEAD + "9007199254740993\n", 2, 5, "integers", False, id="past-json-safe-range"),
    pytest.param(HEAD + "a\x00b\n", 2, 6, "U+0000", False, id="nul-byte"),
    pytest.param("format: 1\n!!int abc: x\n", 2, 1, "not an integer", False, id="int-tag-key"),
]
"""(text, line, column, words, stalled): `stalled` for a value that once stalled the loader."""


def _validate_stalled(folder: Path) -> None:
    """One `validate` process, killed at the deadline, for every value that once stalled the loader."""
    paths = []
    for case in YAML_VALUES:
        if case.values[4]:
            path = write(folder, case.values[0], f"{case.id}.yaml")
            paths.append(str(path))
    code, output, seconds, rss = run_cli("validate", *paths)
    (folder / "validated.json").write_text(json.dumps([code, output, seconds, rss]), encoding="utf-8")


@pytest.fixture(scope="module")
def stalled_validated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[int, str, float, float]]:
    folder = made_once(tmp_path_factory, "stalled-values", _validate_stalled)
    code, output, seconds, rss = json.loads((folder / "validated.json").read_text(encoding="utf-8"))
    return folder, (code, output, seconds, rss)


@pytest.mark.parametrize(("text", "line", "column", "words", "stalled"), YAML_VALUES)
def test_yaml_values_that_crashed_or_stalled_the_loader_are_one_line(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    text: str,
    line: int,
    column: int,
    words: str,
    stalled: bool,
) -> None:
    """`stalled`: the values that once stalled the loader are read by one process of their own (one line each),
    killed at the deadline; the others (which crashed it) go through `main()` in this process."""
    if stalled:
        folder, (code, output, seconds, rss) = request.getfixturevalue("stalled_validated")
        path = folder / f"{request.node.callspec.id}.yaml"
        assert code == 2 and len(output.strip().splitlines()) == sum(case.values[4] for case in YAML_VALUES), output
        mine = "\n".join(line for line in output.splitlines() if line.startswith(f"{path}:"))
        match = refused_once((code, mine, seconds, rss), path)
    else:
        path = write(tmp_path, text)
        match = refused_once(in_process("validate", str(path)), path)
    assert (int(match["line"]), int(match["col"])) == (line, column), match[0]
    assert words in match["msg"], match[0]


def test_a_proxy_file_is_read_by_the_same_loader(tmp_path: Path) -> None:
    """`kind: proxy` files go through the same reader and loader: a bad scalar is one line before any server runs
    (what the loader says is the subject, so through `main()`: the upstream `true` is never started either way)."""
    text = PROXY_FILE + "tools:\n  x: {retry_safe: !!bool maybe, fields: [a]}\n"
    path = write(tmp_path, text, "proxy.yaml")
    for command in ("proxy", "run"):
        match = refused_once(in_process(command, str(path), "--upstream-cmd", "true"), path)
        assert (int(match["line"]), int(match["col"]), match["path"]) == (6, 19, "tools.x.retry_safe")
        assert "'maybe' is not a boolean" in match["msg"]


def test_the_size_and_value_limits_refuse_the_file_in_one_line(tmp_path: Path) -> None:
    big = write(tmp_path, "a: '" + "x" * 60_000 + "'\n" + "b: [" + ",".join(["1"] * (MAX_FILE_BYTES // 2)) + "]\n")
    match = refused_once(run_cli("validate", str(big)), big, position=False)
    assert f"the limit is {MAX_FILE_BYTES} bytes" in match["msg"]
    many = write(tmp_path, "a: [" + ",".join(["1"] * MAX_NODES) + "]\n", "many.yaml")
    match = refused_once(run_cli("validate", str(many)), many)
    assert f"more than {MAX_NODES} values" in match["msg"]
    bomb = "a: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                                                      for p, c in zip("abcdefgh", "bcdefghi", strict=True))  # fmt: skip
    bombed = write(tmp_path, bomb, "bomb.yaml")
    match = refused_once(run_cli("validate", str(bombed)), bombed)
    assert f"more than {MAX_NODES} values" in match["msg"]


@contextmanager
def unix_socket(path: Path) -> Iterator[None]:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        yield
    finally:
        server.close()


def test_a_fifo_a_device_a_directory_or_a_socket_is_refused_without_blocking(tmp_path: Path) -> None:
    """Before: `validate FIFO` blocked in open() until someone wrote to the FIFO, for ever."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    sock = Path(f"/tmp/mh-{os.getpid()}.yaml")  # AF_UNIX paths are short
    with unix_socket(sock):
        assert stat.S_ISSOCK(sock.stat().st_mode)
        for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a device"), (sock, "a socket")):
            match = refused_once(run_cli("validate", str(path)), path, position=False)
            assert f"{kind}, not a regular file" in match["msg"], match[0]
    sock.unlink(missing_ok=True)
    served = run_cli("serve", str(fifo), "--trace-dir", str(tmp_path / "traces"))
    assert "a FIFO, not a regular file" in refused_once(served, fifo, position=False)["msg"]
    proxied = run_cli("proxy", str(fifo), "--upstream-cmd", "true", "--trace-dir", str(tmp_path / "traces"))
    assert "a FIFO, not a regular file" in refused_once(proxied, fifo, position=False)["msg"]
    folder = tmp_path / "folder.yaml"  # a directory where `proxy` expects its file (nothing to block on: in process)
    folder.mkdir()
    proxied = in_process("proxy", str(folder), "--upstream-cmd", "true", "--trace-dir", str(tmp_path / "traces"))
    assert "a directory, not a regular file" in refused_once(proxied, folder, position=False)["msg"]
    # a folder of scenarios is read without the FIFO in it: only regular files are scenario files
    good = tmp_path / "good"
    good.mkdir()
    (good / "travel.yaml").write_text((REPO_ROOT / "scenarios" / "travel.yaml").read_text(encoding="utf-8"))
    os.mkfifo(good / "stray.yaml")
    code, output, _, _ = run_cli("validate", str(good))
    assert code == 0 and "stray" not in output, output


def test_the_worst_file_within_the_limits_loads_quickly(tmp_path: Path) -> None:
    """A file at the value limit, shaped to cost the most per value (bench/scenario_load.py, `many-tools`: about
    4,000 tools): `validate` loads it and runs its golden path within the guards (before the limits were lowered, a
    file of this shape at 2 MiB took 16 s of CPU and 300 MiB)."""
    from bench.scenario_load import many_tools

    path = write(tmp_path, many_tools(), "worst.yaml")
    code, output, seconds, rss = run_cli("validate", str(path))
    assert code == 0 and "Traceback" not in output, output
    assert ": ok (worst: " in output, output
    assert seconds < DEADLINE and rss < RSS_CEILING_MIB, (seconds, rss)

"""The proxy commands in docs/proxy.md, README.md, the shipped proxy files' comments and `--help` examples work as
written: each parses, each that would start a proxy file's own command says `--allow-upstream-command` (without it,
it would only print the refusal), the refusal docs/proxy.md shows is the one printed, a stdio proxy from a file's
comment serves, and docs/proxy.md's commands run as written in one shell session (tests/docs/session.py)."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import anyio
import pytest
import yaml
from conftest import REPO_ROOT, run_main
from mcp import Client, StdioServerParameters

from mcp_hazard.cli import build_parser, command_module
from tests.docs.coverage import to_run
from tests.docs.session import play, session
from tests.e2e.support import console_script

from .support import PROXIES
from .test_everything_server import _everything_over_http

pytestmark = pytest.mark.e2e

DOC = REPO_ROOT / "docs" / "proxy.md"
REFUSAL = re.compile(r"^proxies/\S+\.yaml:\d+:\d+: upstream\.command: .*$", re.MULTILINE)


def _commands() -> list[str]:
    """Every `mcp-hazard proxy|run` line shown for proxy files, without its trailing comment."""
    lines: list[str] = []
    doc = DOC.read_text(encoding="utf-8")
    for block in re.findall(r"```bash\n(.*?)```", doc, re.DOTALL):
        lines += [line for line in block.splitlines() if line.startswith("mcp-hazard ")]
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    lines += [line for line in readme if line.startswith(("mcp-hazard proxy ", "mcp-hazard run proxies/"))]
    for path in sorted(PROXIES.glob("*.yaml")):
        comments = path.read_text(encoding="utf-8").splitlines()
        lines += [line.lstrip("# ") for line in comments if line.startswith("#") and "mcp-hazard " in line]
    lines += [
        line
        for name in ("proxy", "run")
        for line, _ in command_module(name).EXAMPLES
        if name == "proxy" or "proxies/" in line
    ]
    commands = [line.split("  #")[0].strip() for line in lines]
    return [re.sub(r"\s*\[([^]|]*)\]", r" \1", command) for command in commands]  # README's [optional] parts, given


def test_every_proxy_command_shown_parses_and_says_the_flag_where_it_needs_it() -> None:
    commands = _commands()
    assert len(commands) >= 14, commands
    parser = build_parser()
    for command in commands:
        words = shlex.split(command)
        args = parser.parse_args(words[1:])  # exits (2) on a flag or value the parser does not take
        files = [args.path] if args.command == "proxy" else list(args.paths)
        runs_the_files_command = any(
            path and (REPO_ROOT / path).is_file() and "command" in (yaml.safe_load((REPO_ROOT / path).read_text())
                                                                    .get("upstream") or {})
            for path in files
        ) and not (args.upstream_cmd or args.upstream_url or args.replay)  # fmt: skip
        assert args.allow_upstream_command == runs_the_files_command, command


def test_the_refusal_shown_is_the_one_printed() -> None:
    (shown,) = REFUSAL.findall(DOC.read_text(encoding="utf-8"))
    done = run_main("proxy", "proxies/time.yaml", cwd=REPO_ROOT)
    assert done.returncode == 2 and done.stderr.splitlines() == [shown]


def test_a_stdio_proxy_from_a_files_comment_serves(tmp_path: Path, time_server: str) -> None:
    """`mcp-hazard proxy proxies/time.yaml --allow-upstream-command --hazard transient_error`, from a folder where
    `proxies/` is the repository's and `python` is this interpreter (the file runs `python -m mcp_server_time`)."""
    (tmp_path / "proxies").symlink_to(PROXIES)
    comment = next(line for line in (PROXIES / "time.yaml").read_text().splitlines() if "mcp-hazard proxy" in line)
    words = shlex.split(comment.lstrip("# ").split("  #")[0])
    assert words[:2] == ["mcp-hazard", "proxy"] and "--allow-upstream-command" in words
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    params = StdioServerParameters(command=console_script(), args=words[1:], cwd=str(tmp_path), env=env)

    async def run() -> list[str]:
        with anyio.fail_after(120):
            async with Client(params) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    assert anyio.run(run) == ["get_current_time", "convert_time", "submit_answer"]
    assert list((tmp_path / "runs").glob("*.jsonl"))


def test_the_proxy_doc_runs_as_written(tmp_path: Path, time_server: str, npm_servers: dict[str, Path]) -> None:
    """Every command of docs/proxy.md that tests/docs/coverage.py leaves to this session, in order: `python` is the
    virtualenv's, which has mcp-server-time; the doc's Streamable HTTP server (127.0.0.1:3001) is server-everything
    over HTTP on a free port. The replayed run gives the recorded run's traces."""
    doc = "docs/proxy.md"
    with (
        _everything_over_http(npm_servers, tmp_path / "everything.log") as upstream,
        session(tmp_path, paths={"http://127.0.0.1:3001/mcp": upstream}) as shell,
    ):
        play(shell, to_run(doc, "test_the_proxy_doc_runs_as_written"))
    recorded = sorted(path.name for path in (tmp_path / "runs" / "matrix" / "traces").glob("*.jsonl"))
    replayed = sorted(path.name for path in (tmp_path / "runs" / "replayed" / "traces").glob("*.jsonl"))
    assert recorded and recorded == replayed

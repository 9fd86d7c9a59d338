"""A reader's shell session: the commands a doc shows, run in order in one temporary folder, each checked against
the output the doc prints below it.

What is the same as the reader's shell: bash runs each command as written (pipes, redirections, `~`, `$VAR`), in the
session's folder, with the virtualenv's `bin` first on PATH (so `mcp-hazard` and `python` are the checkout's), and
`export X=...` or `X=...` lines hold for the commands after them. What is substituted, and only this:
- HOME is a folder of the session (nothing is written to the real home);
- a server started with `--http 127.0.0.1:PORT` (`serve`, `proxy`) runs in the background on a port the system
  picks (`:0`), and PORT becomes that port in every later command and in the output shown;
- each session may replace fixed paths of the doc (`/tmp/`, `/home/you/mcp-hazard`) by its own folder: the test
  says which.

How output is compared (`matches`): the lines shown must be the lines printed (stdout and stderr together, as an
80-column terminal shows them), trailing spaces and blank lines at the end aside; a line `...` stands for any number
of lines, and `...` inside a line for any text. A command exits as README's table of exit codes says for what the doc
shows (`code`) unless the session says otherwise, and nothing prints a Python traceback.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
from conftest import WAIT_S, run_main
from mcp import Client, StdioServerParameters

from .shown import ROOT, Shown, shown_in

SERVER = re.compile(r"^mcp-hazard (serve|proxy) .*--http (127\.0\.0\.1|localhost):(\d+)")
STDIO_SERVER = re.compile(r"^mcp-hazard (serve|proxy) (?!.*--http)")
ERROR = re.compile(r"^mcp-hazard( [a-z-]+)*: error: |^\S+\.ya?ml:\d+:\d+: ")
FINDING = re.compile(r": unsolvable: |\bproblem\(s\)|: not correct \(")
SERVING = re.compile(r"(?:serving|proxying) .* on http://127\.0\.0\.1:(\d+)")
ASSIGNMENT = re.compile(r"^(export )?[A-Za-z_][A-Za-z0-9_]*=\S*$")
SHELL_WORK = re.compile(r"[\s|&;<>()$`\\\"'*?\[\]{}~#!]")  # expansions, quoting, globs, redirections, lists
IN_PROCESS = re.compile(r"^mcp-hazard(?: [^\s|&;<>()$`\\\"'*?\[\]{}~#!]+| '[^'\n]*')*$")
"""A command with nothing for bash to do but split words (single quotes at most) runs through `main()` in the
test's process (`run_main`): the same program and output, without a Python start-up and its imports per command.
Anything else (a pipe, a `$VAR`, a glob) runs in bash as the reader's shell would."""
START_TIMEOUT_S = COMMAND_TIMEOUT_S = WAIT_S  # bounds on waits, never speed checks (docs/decisions.md)


def pattern(shown: tuple[str, ...] | list[str]) -> re.Pattern[str]:
    """The regular expression the printed text must match whole: `...` lines and `...` in a line are wildcards."""
    parts = []
    for line in shown:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = re.split(r"\.\.\.(?!\.)", line.rstrip())  # `seed3....jsonl`: `seed3.`, any text, `jsonl`
            parts.append(".*?".join(re.escape(piece) for piece in pieces) + r"[ \t]*\n")
    return re.compile("".join(parts), re.S)


def matches(shown: tuple[str, ...] | list[str], printed: str) -> bool:
    text = "".join(line.rstrip() + "\n" for line in printed.rstrip().splitlines())  # blank lines at the end aside
    return pattern(shown).fullmatch(text) is not None


def _cpu() -> float:
    """CPU seconds of this process and its children: a command runs in either."""
    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in used)


@dataclass
class Session:
    """One folder, one environment, the servers started in it; `run` each command in turn."""

    cwd: Path
    paths: dict[str, str] = field(default_factory=dict)  # fixed path in the doc -> the session's own
    codes: dict[str, int] = field(default_factory=dict)  # command -> its exit code, where not 0
    timeouts: dict[str, float] = field(default_factory=dict)  # command -> seconds, where a command takes long
    extra_path: list[Path] = field(default_factory=list)
    extra_env: dict[str, str] = field(default_factory=dict)
    prelude: list[str] = field(default_factory=list)
    ports: dict[str, str] = field(default_factory=dict)
    servers: list[tuple[subprocess.Popen[bytes], Path]] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        home = self.cwd / ".home"
        home.mkdir(exist_ok=True)
        path = os.pathsep.join([str(Path(sys.executable).parent), *map(str, self.extra_path), os.environ["PATH"]])
        return {
            **os.environ,
            "PATH": path,
            "HOME": str(home),
            "NO_COLOR": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "COLUMNS": "80",
            **self.extra_env,
        }

    def substitute(self, text: str) -> str:
        for fixed, own in [*self.paths.items(), *self.ports.items()]:
            text = text.replace(fixed, own)
        return text

    def run(self, shown: Shown) -> str:
        """Run one command as the doc shows it; returns what it printed (stdout and stderr in one stream)."""
        started, cpu = time.monotonic(), _cpu()
        try:
            return self._run(shown)
        finally:  # shown by pytest -s, or on a failure
            print(f"{time.monotonic() - started:6.1f} s {_cpu() - cpu:5.1f} cpu  {shown}"[:160])

    def _run(self, shown: Shown) -> str:
        command = self.substitute(shown.command)
        self.ran.append(shown.command)
        if ASSIGNMENT.match(command):
            self.prelude.append(command)
            return ""
        if SERVER.match(command):
            self._start(command)
            return ""
        if STDIO_SERVER.match(command) and not shown.output and self.code(shown) == 0:
            return self._connect(command, shown)
        env = self._env_after_prelude() if IN_PROCESS.match(command) else None
        if env is not None:
            ran = run_main(*shlex.split(command)[1:], cwd=self.cwd, env=env, together=True)
            returncode, printed = ran.returncode, ran.stdout
        else:
            returncode, printed = self._shell(shown, command)
        where = f"{shown}\n--- printed:\n{printed[-6000:]}"
        assert returncode == self.code(shown), f"exit code {returncode}: {where}"
        assert "Traceback" not in printed, where
        if shown.output:
            expected = [self.substitute(line) for line in shown.output]
            assert matches(expected, printed), f"{where}\n--- the doc shows:\n" + "\n".join(expected)
        elif command.startswith("curl "):  # an example with no answer shown must get a JSON answer, not an error
            answer = json.loads(printed)
            assert not (isinstance(answer, dict) and "error" in answer), where
        return printed

    def _shell(self, shown: Shown, command: str) -> tuple[int, str]:
        script = "\n".join([*self.prelude, command])
        try:
            done = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=self.timeouts.get(shown.command, COMMAND_TIMEOUT_S))  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{shown}: still running after {exc.timeout}s") from None
        return done.returncode, done.stdout

    def _env_after_prelude(self) -> dict[str, str] | None:
        """The environment bash would give the command after the session's assignments, or None where an
        assignment needs the shell (a `$VAR`, quotes, `~`): that command then runs in bash."""
        env = self.env
        for line in self.prelude:
            name, _, value = line.removeprefix("export ").partition("=")
            if SHELL_WORK.search(value):
                return None
            if line.startswith("export ") or name in env:  # a shell variable alone never reaches the program
                env[name] = value
        return env

    def code(self, shown: Shown) -> int:
        """The exit code README's table gives what the doc shows: 2 for an error line (a file's problem included),
        1 for a finding (unsolvable, problems), else 0; a session may say otherwise for a command."""
        if shown.command in self.codes:
            return self.codes[shown.command]
        if any(ERROR.match(line) for line in shown.output):
            return 2
        return 1 if any(FINDING.search(line) for line in shown.output) else 0

    def _connect(self, command: str, shown: Shown) -> str:
        """A stdio server as a client meets it: started by an MCP client (the official SDK), its tools listed and its
        task prompt read, then closed as a desktop assistant closes it."""
        script = "\n".join([*self.prelude, "exec " + command])
        params = StdioServerParameters(command="bash", args=["-c", script], cwd=str(self.cwd), env=self.env)

        async def listed() -> tuple[list[str], str]:
            with anyio.fail_after(COMMAND_TIMEOUT_S):
                async with Client(params) as client:
                    tools = [tool.name for tool in (await client.list_tools()).tools]
                    prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
                    return tools, ",".join(prompts)

        tools, prompts = anyio.run(listed)
        assert tools, shown  # a proxy without a proxy file serves the server's tools alone, no submit_answer
        assert "submit_answer" in tools or command.startswith("mcp-hazard proxy "), f"{shown}: {tools}"
        return f"tools: {', '.join(tools)}; prompts: {prompts}"

    def _start(self, command: str) -> None:
        """A server in the background on a port the system picks; the doc's port means that port from now on."""
        found = SERVER.match(command)
        assert found is not None
        doc_port = found.group(3)
        log = self.cwd / f".server-{len(self.servers)}.log"
        script = "\n".join([*self.prelude, "exec " + command.replace(f":{doc_port}", ":0", 1)])
        with log.open("wb") as stream:
            process = subprocess.Popen(["bash", "-c", script], cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                       stdout=stream, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        self.servers.append((process, log))
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            said = SERVING.search(log.read_text(encoding="utf-8", errors="replace"))
            if said:
                self.ports[f":{doc_port}"] = f":{said.group(1)}"
                routes = httpx.get(f"http://127.0.0.1:{said.group(1)}/", timeout=WAIT_S)  # it serves, and says how
                assert routes.status_code == 200 and "routes" in routes.json(), routes.text
                return
            if process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{command}: did not say where it listens:\n{log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        for process, log in self.servers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=WAIT_S)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=WAIT_S)
            assert "Traceback" not in log.read_text(encoding="utf-8", errors="replace"), log.read_text()[-3000:]


@contextmanager
def session(cwd: Path, **options: object) -> Iterator[Session]:
    """A session in `cwd` with copies of the shipped scenarios, proxy files and client programs (a command may change
    them)."""
    for name in ("scenarios", "proxies", "clients"):
        subprocess.run(["cp", "-r", str(ROOT / name), str(cwd / name)], check=True, timeout=WAIT_S)
    shell = Session(cwd, **options)  # type: ignore[arg-type]
    try:
        yield shell
    finally:
        shell.stop()


Prepare = Callable[[], object]


def play(shell: Session, commands: list[Shown], before: dict[str, Prepare | list[Prepare]] | None = None) -> None:
    """Run every command in order; `before[command]` prepares what the doc says the reader has made (a file), once,
    or, given a list, one item for each time the command comes."""
    hooks = {command: list(h) if isinstance(h, list) else [h] for command, h in (before or {}).items()}
    for shown in commands:
        if hooks.get(shown.command):
            hooks[shown.command].pop(0)()
        shell.run(shown)
    left = {command: len(h) for command, h in hooks.items() if h}
    assert not left, f"prepared for commands the doc does not show (or not as often): {left}"


def block_text(doc: str, first_line: str) -> str:
    """The body of the fenced block of `doc` whose first line is `first_line`, or that follows a paragraph naming
    it as a file (`` `tests/test_my_agent.py`: ``)."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    for match in re.finditer(r"^```\w*\n(.*?)^```", text, re.S | re.M):
        body = match.group(1)
        before = text[: match.start()].rstrip().rsplit("\n\n", 1)[-1]  # the paragraph above the block
        if body.startswith(first_line) or before.startswith(f"`{first_line}`"):
            return body
    raise AssertionError(f"{doc} has no block for {first_line!r}")


def commands_of(doc: str) -> list[Shown]:
    """The doc's commands in the order a reader meets them (blocks and inline spans merged by line)."""
    return sorted(shown_in(ROOT / doc), key=lambda shown: shown.line)


def words(command: str) -> list[str]:
    return shlex.split(command)

"""A pytest plugin for agent developers: start an mcp-hazard episode inside a test, drive it, and assert on its score.

Installed with mcp-hazard (entry point `pytest11: mcp_hazard`), so the fixture is there in any project that has
mcp-hazard installed; nothing to import or register. Async tests run with AnyIO's pytest plugin (`anyio` is a
dependency of mcp-hazard, and its plugin registers the `anyio` marker):

    @pytest.mark.anyio
    async def test_agent_recovers(hazard_episode):
        async with hazard_episode("scenarios/travel.yaml", task="fare-class", hazards=["transient_error"]) as ep:
            await my_agent.solve(ep.client, ep.prompt)     # the agent drives ep.client and calls submit_answer
        assert ep.score.correct
        assert all(v.recovered for v in ep.score.verdicts)

Traces go to the test's `tmp_path`, or to `--mcp-hazard-trace-dir DIR` to keep them. A bad scenario path, task,
hazard or condition raises `mcp_hazard.errors.UserError` before anything starts, and the test fails with that one
line (pass `--tb=long` for the full traceback).

The plugin imports nothing heavy at pytest start-up: the server, the SDK client and the scorer load on first use.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mcp import Client

    from mcp_hazard.condition import Condition
    from mcp_hazard.runner.transports import Connected
    from mcp_hazard.scenario.files import LoadedScenario
    from mcp_hazard.scenario.models import Task
    from mcp_hazard.scoring.episode_score import EpisodeScore
    from mcp_hazard.trace.reader import Trace

__all__ = ["HazardEpisode", "HazardEpisodeFactory", "hazard_episode"]

TRACE_DIR_OPTION = "--mcp-hazard-trace-dir"
FIXTURE = "hazard_episode"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_TRANSPORTS = ("memory", "stdio", "http")


class HazardEpisode:
    """One episode in a test: `client` and `prompt` inside the `async with` block, `trace` and `score` after it."""

    def __init__(
        self,
        *,
        client: Client,
        prompt: str,
        trace_path: Path,
        episode_id: str,
        scenario: LoadedScenario,
        task: Task,
        condition: Condition,
        transport: str,
    ) -> None:
        self.client = client
        self.prompt = prompt
        self.trace_path = trace_path
        self.episode_id = episode_id
        self.scenario = scenario
        self.task = task
        self.condition = condition
        self.transport = transport
        self._trace: Trace | None = None
        self._score: EpisodeScore | None = None

    @property
    def trace(self) -> Trace:
        """The episode's trace, read back once the `async with` block has ended."""
        if self._trace is None:
            raise RuntimeError(f"episode {self.episode_id}: the trace is read when the `async with` block ends")
        return self._trace

    @property
    def score(self) -> EpisodeScore:
        """The episode's score (answer, hazard verdicts, failures), ready once the `async with` block has ended."""
        if self._score is None:
            raise RuntimeError(f"episode {self.episode_id}: the score is ready when the `async with` block ends")
        return self._score

    def _finish(self) -> None:
        from mcp_hazard.scoring.episode_score import score_episode
        from mcp_hazard.trace.reader import read_trace

        self._trace = read_trace(self.trace_path)
        self._score = score_episode(self._trace, self.scenario.model)

    def __repr__(self) -> str:
        return f"HazardEpisode({self.episode_id!r}, transport={self.transport!r}, trace={str(self.trace_path)!r})"


class HazardEpisodeFactory:
    """What the `hazard_episode` fixture returns: call it to get an async context manager over one episode."""

    def __init__(self, trace_dir: Path, base: Path, test_name: str) -> None:
        self.trace_dir = trace_dir
        self.base = base
        self.test_name = _UNSAFE.sub("-", test_name).strip("-.")[:48] or "test"

    def __call__(
        self,
        scenario_path: str | Path,
        *,
        task: str | None = None,
        seed: int = 0,
        hazards: Iterable[str | Mapping[str, Any]] | str = (),
        profile: str = "strict",
        interventions: Iterable[str] = (),
        transport: str = "memory",
        agent: str = "under-test",
        mode: str = "auto",
    ) -> AbstractAsyncContextManager[HazardEpisode]:
        """Check the arguments now (a `UserError` names what is wrong), then open the episode on `async with`.

        scenario_path: a scenario YAML file, relative to the working directory or to the test file.
        task: the task id (default: the scenario's first task). seed, profile: the condition, as on the CLI.
        hazards: CLI-style strings (`"transient_error"`, `"latency:delay_s=3,slots=1"`, `"all"`) or dicts.
        interventions: interface interventions by name (`"rename"`, `"reorder"`...), as `--intervention` on the CLI.
        transport: memory (in this process), stdio (`mcp-hazard serve` as a subprocess) or http (a uvicorn server on
        127.0.0.1). agent: the name recorded in the trace. mode: the protocol era, "auto", "legacy" or a version.
        """
        from mcp_hazard.errors import UserError
        from mcp_hazard.hazards.instances import build_hazards, expand
        from mcp_hazard.interventions import build_interventions
        from mcp_hazard.load import load_scenario
        from mcp_hazard.server.episodes import EPISODE_ID, new_episode_id, parse_condition
        from mcp_hazard.suggest import did_you_mean

        if transport not in _TRANSPORTS:
            raise UserError(f"hazard_episode: transport must be one of {', '.join(_TRANSPORTS)}, got {transport!r}")
        if not EPISODE_ID.match(agent):
            raise UserError(f"hazard_episode: agent name {agent!r} must be 1-128 letters, digits, '.', '_' or '-'")
        loaded = load_scenario(self._scenario_file(scenario_path))
        chosen = loaded.model.tasks[0] if task is None else loaded.model.task(task)
        if chosen is None:
            known = ", ".join(t.id for t in loaded.model.tasks)
            hint = did_you_mean(str(task), [t.id for t in loaded.model.tasks])
            raise UserError(f"{loaded.path}: scenario {loaded.id!r} has no task {task!r}{hint}; its tasks: {known}")
        options = [hazards] if isinstance(hazards, str) else list(hazards)
        changes = [interventions] if isinstance(interventions, str) else list(interventions)
        condition = parse_condition({"seed": seed, "profile": profile, "hazards": options, "interventions": changes})
        build_hazards(expand(list(condition.hazards), loaded.model, chosen), loaded.model, chosen)
        build_interventions(list(condition.interventions), condition.seed, loaded.model, chosen)
        episode_id = f"{self.test_name}.{new_episode_id(loaded.id, chosen.id, condition.seed)}"[-128:].lstrip("._-")
        return self._open(loaded, chosen, condition, transport, agent, mode, episode_id)

    def _scenario_file(self, scenario_path: str | Path) -> Path:
        path = Path(scenario_path)
        if not path.is_absolute() and not path.exists() and (self.base / path).exists():
            return self.base / path
        return path

    @asynccontextmanager
    async def _open(
        self,
        loaded: LoadedScenario,
        task: Task,
        condition: Condition,
        transport: str,
        agent: str,
        mode: str,
        episode_id: str,
    ) -> AsyncIterator[HazardEpisode]:
        from mcp_hazard.server.served_episode import SUBMIT_TOOL

        self.trace_dir.mkdir(parents=True, exist_ok=True)
        prompt = f"{task.prompt.strip()}\n\nWhen you have the answer, call the `{SUBMIT_TOOL}` tool with it."
        try:
            async with self._connect(loaded, task, condition, transport, agent, mode, episode_id) as conn:
                episode = HazardEpisode(
                    client=conn.client, prompt=prompt, trace_path=conn.trace_path, episode_id=conn.episode_id,
                    scenario=loaded, task=task, condition=condition, transport=transport,
                )  # fmt: skip
                yield episode
        except BaseExceptionGroup as group:
            # The SDK client's task group wraps whatever left the block (a failed assert, the agent's own error):
            # hand the test its one exception back, so pytest shows it as it would without the fixture.
            leaf = _only_exception(group)
            if leaf is None:
                raise
            raise leaf from None
        episode._finish()

    @asynccontextmanager
    async def _connect(
        self,
        loaded: LoadedScenario,
        task: Task,
        condition: Condition,
        transport: str,
        agent: str,
        mode: str,
        episode_id: str,
    ) -> AsyncIterator[Connected]:
        from mcp_hazard.runner.transports import Connected, HttpHost, open_episode, serve_command
        from mcp_hazard.server.episodes import EpisodeRegistry

        if transport == "stdio":
            # As open_episode does, but the server's stderr goes to a file beside the trace: the SDK's default is the
            # sys.stderr of when it was imported, which under pytest's capture may be a stream with no file behind it.
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import stdio_client

            command = serve_command(loaded, task.id, condition, self.trace_dir, episode_id, agent)
            params = StdioServerParameters(command=command[0], args=command[1:])
            with (self.trace_dir / f"{episode_id}.server.log").open("w", encoding="utf-8") as errlog:
                async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                    yield Connected(client, self.trace_dir / f"{episode_id}.jsonl", episode_id)
        elif transport == "http":
            host = HttpHost(EpisodeRegistry([loaded], self.trace_dir, transport="http"))
            async with (
                host.running(),
                open_episode(
                    "http", loaded, task.id, condition, self.trace_dir, mode=mode, http_host=host, agent=agent,
                    episode_id=episode_id,
                ) as conn,
            ):  # fmt: skip
                yield conn
        else:
            async with open_episode(
                "memory", loaded, task.id, condition, self.trace_dir, mode=mode, agent=agent, episode_id=episode_id
            ) as conn:
                yield conn


def _only_exception(group: BaseExceptionGroup[Any]) -> Exception | None:
    """The single ordinary exception inside (possibly nested) groups, or None when there are several or it is not one
    (a cancellation, KeyboardInterrupt...)."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        current = pending.pop()
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            leaves.append(current)
    if len(leaves) == 1 and isinstance(leaves[0], Exception):
        return leaves[0]
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-hazard")
    group.addoption(
        TRACE_DIR_OPTION,
        dest="mcp_hazard_trace_dir",
        metavar="DIR",
        default=None,
        help="keep the traces of hazard_episode episodes in DIR (default: each test's tmp_path)",
    )


@pytest.fixture
def hazard_episode(request: pytest.FixtureRequest, tmp_path: Path) -> HazardEpisodeFactory:
    """Start mcp-hazard episodes in this test: `async with hazard_episode("scenario.yaml", ...) as ep:`."""
    kept = request.config.getoption("mcp_hazard_trace_dir")
    trace_dir = request.config.invocation_params.dir / kept if kept else tmp_path / "mcp-hazard-traces"
    return HazardEpisodeFactory(trace_dir, Path(request.path).parent, request.node.name)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A UserError in a test that uses `hazard_episode` is reported as its one line, not a traceback into us."""
    report = yield
    excinfo = call.excinfo
    if (
        excinfo is not None
        and report.failed
        and FIXTURE in getattr(item, "fixturenames", ())
        and item.config.getoption("tbstyle", "auto") not in ("long", "native")
    ):
        from mcp_hazard.errors import UserError

        if isinstance(excinfo.value, UserError):
            where = _test_line(item, excinfo)
            report.longrepr = f"{where}mcp-hazard: {excinfo.value}"
    return report


def _test_line(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """`file:line: ` of the last traceback entry in the test's own file, or nothing."""
    path = getattr(item, "path", None)
    for entry in reversed(excinfo.traceback):
        if path is not None and Path(str(entry.path)) == path:
            shown = Path(str(entry.path))
            if shown.is_relative_to(item.config.invocation_params.dir):
                shown = shown.relative_to(item.config.invocation_params.dir)
            return f"{shown}:{entry.lineno + 1}: "
    return ""

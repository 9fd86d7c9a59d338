"""A proxy in one place: how to reach the server (live or from a cassette), what it lists, and how each episode gets
its own connection. `serve_stdio`, the HTTP app and the runner all start episodes through a `ProxyService`."""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.errors import ScenarioError, UserError
from mcp_hazard.proxy.cassette import Cassette, ReplayUpstream, load_cassette
from mcp_hazard.proxy.config import LoadedProxyFile, UpstreamConfig
from mcp_hazard.proxy.environment import Environment, environment
from mcp_hazard.proxy.proxied_episode import ProxyEpisode
from mcp_hazard.proxy.upstream import Listener, Recorder, Upstream, UpstreamError, UpstreamHost
from mcp_hazard.proxy.upstream_info import UPSTREAM_TIMEOUT_S, UpstreamSource


def upstream_source(
    file: LoadedProxyFile | None, command: str | None, url: str | None, replay: str | None,
    *, timeout: float | None = None, allow_command: bool = False, stderr_log: str | None = None,
) -> UpstreamSource:  # fmt: skip
    """The server to reach: the command line's --upstream-cmd/--upstream-url/--replay, else the proxy file's. A
    command from the file runs only with --allow-upstream-command: a proxy file may come from a stranger, and the
    command line shows what it would run, where. `stderr_log`: where a command's stderr goes (else ours)."""
    given = [flag for flag, value in (("--upstream-cmd", command), ("--upstream-url", url), ("--replay", replay))
             if value is not None]  # fmt: skip
    if len(given) > 1:
        raise UserError(f"give one of {', '.join(given)}, not several")
    if replay is not None:
        return UpstreamSource(cassette=replay)
    from_file = file.model.upstream if file is not None else None
    wait = timeout or (from_file.timeout if from_file is not None else None) or UPSTREAM_TIMEOUT_S
    if command is not None or url is not None:
        try:
            config = UpstreamConfig(command=command, url=url)
        except ValueError as exc:
            message = str(exc).splitlines()[-1].strip().removeprefix("Value error, ")
            raise UserError(f"{'--upstream-cmd' if command is not None else '--upstream-url'}: {message}") from None
    elif file is not None and from_file is not None:
        config = from_file
        if config.command is not None and not allow_command:
            problems = file.problems()
            problems.add(
                ("upstream", "command"),
                f"would run {shlex.join(config.argv())!r}; a command from a "
                "file runs only with --allow-upstream-command (or give it yourself with --upstream-cmd)",
            )
            raise ScenarioError(problems.items)
    else:
        raise UserError("no upstream server: give --upstream-cmd 'COMMAND ...', --upstream-url URL or --replay "
                        "CASSETTE (or 'upstream:' in the proxy file)")  # fmt: skip
    if config.url is not None:
        return UpstreamSource(url=config.url, timeout=wait)
    return UpstreamSource(argv=tuple(config.argv()), env=tuple(sorted(config.env.items())), cwd=config.cwd,
                          timeout=wait, stderr_log=stderr_log)  # fmt: skip


class _Relay:
    """A listener whose target is set later: the first connection is opened before its episode exists."""

    def __init__(self) -> None:
        self.target: Listener | None = None

    async def __call__(self, message: Any) -> None:
        if self.target is not None:
            await self.target(message)


@dataclass
class ProxyService:
    source: UpstreamSource
    file: LoadedProxyFile | None = None
    record: str | None = None
    runner: bool = False  # `proxy --runner`: `mcp-hazard run` started this proxy for one of its episodes
    host: UpstreamHost = field(default_factory=UpstreamHost)
    cassette: Cassette | None = None
    env: Environment | None = None
    _kept: tuple[Upstream, Callable[[], None], _Relay] | None = None

    def __post_init__(self) -> None:
        if self.source.cassette is not None:
            if self.record is not None:
                raise UserError("--record and --replay cannot be used together")
            self.cassette = load_cassette(self.source.cassette)
        if self.record is not None:
            self.host.recorder = Recorder(self.record)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ProxyService]:
        try:
            async with self.host.running():
                yield self
        finally:
            if self.host.recorder is not None:
                self.host.recorder.close()

    async def connect(self, listener: Listener | None) -> tuple[Upstream, Callable[[], None]]:
        if self.cassette is not None:
            return ReplayUpstream(self.cassette), lambda: None
        upstream, closed = await self.host.connect(self.source, listener)
        return upstream, closed.set

    async def discover(self, *, keep: bool = False) -> Environment:
        """Connect once, read the server's tools, and check the proxy file against them. With `keep`, the
        connection is handed to the first episode (one server process for a stdio proxy)."""
        relay = _Relay()
        try:
            upstream, close = await self.connect(relay)
            tools = await upstream.list_all_tools()
        except UpstreamError as exc:
            raise UserError(exc.message) from None
        self.env = environment(self.source, upstream.info, tools, self.file)
        if keep:
            self._kept = (upstream, close, relay)
        else:
            close()
        return self.env

    async def _connector(self, episode: ProxyEpisode) -> tuple[Upstream, Callable[[], None]]:
        if self._kept is not None:
            upstream, close, relay = self._kept
            self._kept = None
            relay.target = episode.on_upstream
            return upstream, close
        return await self.connect(episode.on_upstream)

    def make_episode(self, **kwargs: Any) -> ProxyEpisode:
        """For EpisodeRegistry: a proxy episode of the discovered environment."""
        if self.env is None:
            raise RuntimeError("ProxyService.discover() first")
        return ProxyEpisode(environment=self.env, connector=self._connector, **kwargs)

    def upstream_args(self) -> list[str]:
        """The `proxy` command's options that reach the same server (for one stdio episode per process)."""
        args: list[str] = []
        if self.source.cassette is not None:
            args += ["--replay", self.source.cassette]
        elif self.source.url is not None:
            args += ["--upstream-url", self.source.url]
        elif not self.from_file:
            args += ["--upstream-cmd", shlex.join(self.source.argv)]
        else:  # the file's command, which this process was allowed to run
            args += ["--allow-upstream-command"]
        if self.source.cassette is None and self.source.timeout != UPSTREAM_TIMEOUT_S:
            args += ["--upstream-timeout", f"{self.source.timeout:g}"]
        if self.record is not None:
            args += ["--record", self.record]
        if self.source.stderr_log is not None:
            args += ["--upstream-log", self.source.stderr_log]
        return args

    @property
    def from_file(self) -> bool:
        """Whether the server is the one the proxy file names (its env and cwd then come from the file too)."""
        upstream = self.file.model.upstream if self.file is not None else None
        return upstream is not None and upstream.url is None and tuple(upstream.argv()) == self.source.argv

    @property
    def with_task(self) -> bool:
        return self.file is not None and bool(self.file.model.tasks)

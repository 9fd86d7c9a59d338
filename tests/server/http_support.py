"""A real uvicorn server on 127.0.0.1 (free port) inside the test's event loop, around a registry the test can inspect.

The registry's clock is a `StepClock` the test moves by hand: eviction is then checked by counting what the registry
holds after a known amount of (monotonic, fake) time, never by waiting and asserting on wall time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from conftest import WAIT_S

from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import free_port
from mcp_hazard.server.connections import Limits, http_server
from mcp_hazard.server.episodes import EpisodeRegistry
from mcp_hazard.server.http import build_http_app

REPO_ROOT = Path(__file__).resolve().parents[2]
TRAVEL = REPO_ROOT / "scenarios" / "travel.yaml"
TOKEN = "control-token-for-tests"
OPERATOR = {"authorization": f"Bearer {TOKEN}"}
"""Headers of the operator's requests: the control token the served app is built with."""


class StepClock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def travel_registry(trace_dir: Path, *, ttl: float | None, clock: StepClock | None = None) -> EpisodeRegistry:
    return EpisodeRegistry([load_scenario(TRAVEL)], trace_dir, transport="http", ttl=ttl, clock=clock or StepClock())


@asynccontextmanager
async def serving(registry: EpisodeRegistry, *, token: str | None = TOKEN) -> AsyncIterator[str]:
    """Serve `registry` over real HTTP, with the control token `token` (OPERATOR's); yields the base URL."""
    port = free_port()
    app = build_http_app(registry, token=token)
    server = http_server(app, Limits(), host="127.0.0.1", port=port, lifespan="on")
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        with anyio.fail_after(WAIT_S):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True

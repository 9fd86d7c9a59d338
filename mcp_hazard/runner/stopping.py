"""Stopping a run with a signal: SIGINT (Ctrl-C) or SIGTERM ends it cleanly, as a full disk does.

The episodes under way are cancelled: their agents' clients close (a stdio server gets EOF and records its end), an
external program is killed with its process group, the run's HTTP server shuts down. None of them gets
`agent_ended`, so the scorer reads each as `interrupted` (ours, not the agent's: in no rate) and the same command runs
it again; the episodes that finished keep their traces and run-log lines. No report is written (the report of a
half-run matrix is `score`'s); the run ends with one line and exit code 128 + the signal's number (130 for Ctrl-C,
143 for SIGTERM). A second signal does what it would have done without the run: Ctrl-C again quits at once.

The handler is a plain `signal.signal` one rather than the event loop's: it runs at once in the main thread, so the
run knows it is stopping before anything the same signal caused elsewhere reaches it (a stdio server stopped by the
same Ctrl-C closes its pipe only later), and an episode that ends meanwhile is not blamed on its agent.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import anyio

from mcp_hazard.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stoppable(Protocol):
    signal: int | None

    def say(self, text: str) -> None: ...


@contextmanager
def stop_on_signals(runner: Stoppable) -> Iterator[anyio.CancelScope]:
    """A cancel scope that SIGINT or SIGTERM cancels, recording the signal in `runner.signal` first; the previous
    handlers are back once the first signal arrives and after the block. Outside the main thread (where no
    handler can be installed) the scope is a plain one."""
    scope = anyio.CancelScope()
    if threading.current_thread() is not threading.main_thread():
        with scope:
            yield scope
        return
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)
        previous.clear()

    def stop(number: int, frame: FrameType | None) -> None:
        if runner.signal is None:
            runner.signal = number
            restore()  # a second signal does what it always does
            loop.call_soon_threadsafe(_cancel, scope, runner, signal.Signals(number).name)

    for number in SIGNALS:
        previous[number] = signal.signal(number, stop)
    try:
        with scope:
            yield scope
    finally:
        restore()


def _cancel(scope: anyio.CancelScope, runner: Stoppable, name: str) -> None:
    runner.say(f"mcp-hazard: {name}: stopping the episodes under way (press Ctrl-C again to quit at once)")
    scope.cancel()


def interrupted(number: int | None, done: Sequence[Any], cells: Sequence[Any], out: Path) -> Interrupted:
    """The one line a stopped run ends with: how far it got, and how to go on."""
    name = signal.Signals(number).name if number is not None else "a signal"
    code = 128 + (number if number is not None else signal.SIGINT)
    left = len(cells) - len(done)
    return Interrupted(
        f"stopped by {name}: {len(done)} of {len(cells)} episodes done, {left} not run or cut short (interrupted); "
        f"run the same command again to run those, or `mcp-hazard score {out}` for what is done",
        code,
    )

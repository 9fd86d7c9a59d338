"""A server process's start-up heap, set aside from the garbage collector once the server is ready to serve.

A server keeps what it built at start-up (modules, loaded scenarios, compiled schemas, the SDK's models) for its whole
life, yet each full collection walks all of it again: over HTTP one full collection came every thousand calls or so
and took 45-65 ms, as much as the calls' own collections put together. `gc.freeze()` moves what is alive at that
moment to a generation the collector no longer walks; everything made later (episodes, calls) is collected as before,
so a long-running server's memory stays flat. It runs once per process and is constant time: no collection first,
which would add a full walk to the start-up (the little start-up garbage it may keep is measured in
docs/performance.md).
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_start_up() -> None:
    """Call when the server is built and about to serve; later calls do nothing."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()

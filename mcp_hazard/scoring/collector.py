"""The cyclic garbage collector paused while scores are built and aggregated.

Scoring makes a few million small objects that live until the report is written (about 920,000 tracked objects at
100,000 episodes). With the collector on, every full collection traverses all of them again, and ever larger ones
come as they grow: a third of `aggregate`'s time at 20,000 episodes went to collections that freed nothing, since
traces, scores and report rows hold no reference cycles.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(collect_first: bool = True) -> Iterator[None]:
    """Run the block with the collector off (if it was on). Afterwards the objects made in the block go to the
    oldest generation, where a collection would have put these long-lived objects, without a traversal: see
    _promote. Nested use is harmless: the inner one finds the collector off and leaves it so. `collect_first`:
    collect the young generations before, while they are small (not when they already hold the scores: that frees
    nothing). Only the young: in a process that embeds scoring (a test run, a notebook) a full collection walks its
    whole heap, 0.2 s in a pytest worker, for every run scored."""
    collecting = gc.isenabled()
    if collecting and collect_first:
        gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            _promote()
            gc.enable()


def _promote() -> None:
    """Move every object the collector tracks to its oldest generation. `gc.freeze()` then `gc.unfreeze()` does that
    without visiting them (both only relink lists); the next full collection examines them, as it would have anyway,
    and frees any cycles among them. Unfreezing would also release objects that someone else froze, so then nothing
    is moved and the collector simply resumes."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()

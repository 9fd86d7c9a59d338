"""The progress bar of a run, on stderr: one bar over every episode, whichever executor runs them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def progress_bar(description: str, total: int, show: bool) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr over `total` episodes, every episode of the run: skipped ones and the first contact
    of each external program count too, so the bar ends at the count the run's last line gives. Yields `advance`."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), disable=not show, transient=False) as progress:
        bar = progress.add_task(description, total=total)
        yield lambda: progress.advance(bar)

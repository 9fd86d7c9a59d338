"""The progress bar of a run, on stderr: one bar over every episode, whichever executor runs them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


@dataclass(frozen=True)
class Bar:
    """The bar while it shows: `advance` moves it on by one episode; `console` prints a line above it."""

    progress: Progress
    task: TaskID
    console: Console

    def advance(self) -> None:
        self.progress.advance(self.task)


@contextmanager
def progress_bar(description: str, total: int, show: bool) -> Iterator[Bar]:
    """A progress bar on stderr over `total` episodes, every episode of the run: skipped ones and the first contact
    of each external program count too, so the bar ends at the count the run's last line gives."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    console = Console(stderr=True)
    with Progress(*columns, console=console, disable=not show, transient=False) as progress:
        yield Bar(progress, progress.add_task(description, total=total), console)

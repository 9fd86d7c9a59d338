"""Every `.jsonl` file under a folder, each with its resolved path: what `score` reads, in a fixed order.

The list is the one `sorted(folder.rglob("*.jsonl"))` gives on POSIX (folders reached through a symbolic link are not
entered; a file that is a link is listed; names compared part by part), but made with one `os.scandir` walk. Building
a `Path` for every entry, sorting `Path`s and resolving each file (a `stat` and a few `lstat`s per path part) took a
third of the time it takes to read and parse the files it found. Here each folder is resolved once, and only a file
that is itself a link is resolved on its own. A folder that cannot be read is passed over; a link that loops is listed
(reading it gives the warning), where `Path.resolve` raised.
"""

from __future__ import annotations

import os
from pathlib import Path

# (sort key: the folder's parts below the root, then the name; the listed path; its resolved path)
_Found = tuple[tuple[str, ...], str, str]
# (a folder still to walk, its resolved path, its sort key, its listed path)
_Folder = tuple[str, str, tuple[str, ...], str]


def jsonl_under(folder: str) -> list[tuple[str, str]]:
    """(path as listed, resolved path) of every `*.jsonl` under `folder`, sorted by their parts below it. A listed
    path is spelled as `str(Path(folder) / part / ...)` spells it. The walk keeps its own stack of folders, so a
    stranger's folder nested thousands deep is listed like any other (it was a RecursionError)."""
    base = str(Path(folder))
    found: list[_Found] = []
    stack: list[_Folder] = [(base, os.path.realpath(base), (), "" if base == "." else os.path.join(base, ""))]
    while stack:
        _walk(*stack.pop(), stack, found)
    found.sort(key=_first)
    return [(listed, resolved) for _, listed, resolved in found]


def _first(item: _Found) -> tuple[str, ...]:
    return item[0]


def _walk(folder: str, real: str, key: tuple[str, ...], listed: str, stack: list[_Folder], found: list[_Found]) -> None:
    """Add the traces in `folder` to `found` and the folders in it to `stack`: `real` is its resolved path, `listed`
    its path as listed, each ending in a separator (or empty)."""
    try:
        with os.scandir(folder) as entries:
            inside = list(entries)
    except OSError:  # unreadable, or gone since its parent was read
        return
    real = os.path.join(real, "")
    for entry in inside:
        name = entry.name
        try:
            is_link = entry.is_symlink()
            into = not is_link and entry.is_dir()
        except OSError:
            continue
        is_trace = name.endswith(".jsonl")
        if not (into or is_trace):
            continue
        below = (*key, os.path.normcase(name))
        if into:
            stack.append((entry.path, real + name, below, listed + name + os.sep))
        if is_trace:
            found.append((below, listed + name, os.path.realpath(entry.path) if is_link else real + name))

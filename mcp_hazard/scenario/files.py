"""Scenario files as files: reading one within the size limit, finding them in folders, and a validated scenario
together with the file it came from."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path as FsPath

from mcp_hazard.errors import Problem, ScenarioError, UserError
from mcp_hazard.json_parse import LONE_SURROGATE
from mcp_hazard.regular_file import NotRegularFile, open_regular
from mcp_hazard.scenario.models import Scenario
from mcp_hazard.scenario.yaml_source import MAX_FILE_BYTES

SCENARIO_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario plus where it came from; the hash lets a trace prove which file it ran."""

    model: Scenario
    path: str
    sha256: str

    @property
    def id(self) -> str:
        return self.model.id

    source_suffix = ".yaml"
    """The suffix of the copy a run folder keeps (`scenarios/ID-SHA12.yaml`)."""

    def source_bytes(self) -> bytes:
        """What a run folder keeps of this scenario, whose SHA-256 is `sha256`: the file itself. An environment that is
        not a file (an AgentDojo suite) keeps what it was built into."""
        return FsPath(self.path).read_bytes()


def read_source(path: str | FsPath) -> tuple[bytes, str]:
    """A user's file as bytes (for its hash) and text, never more than the size limit; one-line errors otherwise.

    Only a regular file is read (regular_file.py: a FIFO would block the open, a device or a socket never ends)."""
    file = str(path)

    def refuse(message: str) -> ScenarioError:
        return ScenarioError([Problem(file, None, None, "", message)])

    if not file.isascii() and LONE_SURROGATE.search(file):  # a name in another encoding, found in a folder
        raise refuse("the file's name is not UTF-8 text, and traces and reports record it as text: rename the file")
    try:
        with open_regular(path, binary=True) as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)  # never more than the limit, however large the file
    except NotRegularFile as exc:
        raise refuse(f"{exc.kind}, not a regular file; give the path of a YAML file") from None
    except OSError as exc:
        raise refuse(f"cannot read file: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise refuse(f"file is larger than the limit; the limit is {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"not UTF-8 text (byte {exc.start})") from None
    return raw, text


def scenario_files(paths: Iterable[str | FsPath]) -> list[FsPath]:
    """The scenario files named by `paths`, directories expanded (sorted, so runs are repeatable). A file named twice
    (`scenarios/ scenarios/travel.yaml`, or through a link) is read once, where it was first named: it is one scenario,
    not two that share an id."""
    found: list[FsPath] = []
    for item in paths:
        path = FsPath(item)
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.suffix in SCENARIO_SUFFIXES and p.is_file()))
        elif path.exists():
            found.append(path)
        else:
            raise UserError(f"{item}: no such file or directory")
    if not found:
        raise UserError(f"no scenario files (*.yaml, *.yml) in {', '.join(map(str, paths))}")
    files: dict[str, FsPath] = {}
    for path in found:
        files.setdefault(os.path.realpath(path), path)
    return list(files.values())

"""Which scenario a trace ran: the finder `score` uses (collect.py says the order it looks in).

A trace names its scenario by path and SHA-256; the file may have moved or changed since, or not be a file at all (an
AgentDojo suite, kept as a snapshot in the run folder's `scenarios/`, or built again from the installed AgentDojo when
no snapshot is found). Each file is hashed and loaded once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from mcp_hazard.agentdojo.snapshot import MAX_SNAPSHOT_BYTES, is_snapshot, load_snapshot
from mcp_hazard.agentdojo.source_names import is_source
from mcp_hazard.errors import ScenarioError, UserError
from mcp_hazard.load import load_scenario
from mcp_hazard.proxy.config import LoadedProxyFile, is_proxy_file, load_proxy_file
from mcp_hazard.regular_file import what_is
from mcp_hazard.scenario.files import SCENARIO_SUFFIXES, LoadedScenario
from mcp_hazard.scenario.yaml_source import MAX_FILE_BYTES

_LARGEST = max(MAX_FILE_BYTES, MAX_SNAPSHOT_BYTES)  # of a scenario file or a suite snapshot


def _sha256(path: Path) -> str | None:
    """None for a file that cannot be read, or larger than any scenario or suite snapshot may be: a path recorded in
    a trace may name any file, so none is read whole."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(_LARGEST + 1)
    except OSError:
        return None
    return hashlib.sha256(raw).hexdigest() if len(raw) <= _LARGEST else None


def _is_file(path: Path) -> bool:
    """`Path.is_file` for a path a trace recorded, which may be anything: too long a name raises there."""
    try:
        return path.is_file()
    except OSError:
        return False


class ScenarioFinder:
    """Finds and loads the scenario a trace ran (module docstring: the order), each file hashed and loaded once."""

    def __init__(self, folders: list[str], allow_python: bool = False, cwd: Path | None = None) -> None:
        self.allow_python = allow_python
        self.cwd = cwd or Path.cwd()
        self.folders: list[Path] = []
        for item in folders:
            path = Path(item)
            if not path.exists():
                raise UserError(f"--scenarios {item}: no such file or directory")
            if not path.is_dir() and not path.is_file():
                raise UserError(f"--scenarios {item}: {what_is(path)}, not a folder or a scenario file")
            self.folders.append(path)
        self._hashes: dict[Path, str | None] = {}
        self._listing: dict[Path, list[Path]] = {}
        self._loaded: dict[Path, LoadedScenario | LoadedProxyFile | str] = {}
        self._found: dict[tuple[str, str, str, Path], tuple[LoadedScenario | LoadedProxyFile | None, str]] = {}

    def _hash(self, file: Path) -> str | None:
        key = file.resolve()
        if key not in self._hashes:
            self._hashes[key] = _sha256(key)
        return self._hashes[key]

    def _files(self, folder: Path) -> list[Path]:
        """Scenario files in a folder (not below it), or the file itself."""
        key = folder.resolve()
        if key not in self._listing:
            if key.is_file():
                self._listing[key] = [key] if key.suffix in SCENARIO_SUFFIXES or is_snapshot(key) else []
            elif key.is_dir():
                self._listing[key] = sorted(
                    p for p in key.iterdir() if (p.suffix in SCENARIO_SUFFIXES and p.is_file()) or is_snapshot(p)
                )
            else:
                self._listing[key] = []
        return self._listing[key]

    def _load(self, file: Path) -> LoadedScenario | LoadedProxyFile | str:
        key = file.resolve()
        if key not in self._loaded:
            try:
                if is_snapshot(file):
                    self._loaded[key] = load_snapshot(file)
                elif is_proxy_file(file):
                    self._loaded[key] = load_proxy_file(str(file))
                else:
                    self._loaded[key] = load_scenario(file, allow_python=self.allow_python)
            except ScenarioError as exc:
                self._loaded[key] = f"scenario file {file} cannot be used: {exc.problems[0]}"
        return self._loaded[key]

    def _recorded(self, path: str, where: Path) -> list[Path]:
        """Where the recorded path may be now: itself if absolute, else below the trace's folder or one above it,
        then below the working directory."""
        recorded = Path(path)
        if recorded.is_absolute():
            return [recorded] if _is_file(recorded) else []
        bases = [where, *where.parents, self.cwd]
        out: list[Path] = []
        for base in bases:
            candidate = base / recorded
            if _is_file(candidate) and candidate.resolve() not in {c.resolve() for c in out}:
                out.append(candidate)
        return out

    def find(
        self, scenario_id: str, path: str, sha: str, where: Path
    ) -> tuple[LoadedScenario | LoadedProxyFile | None, str]:
        """(the scenario, "") when the exact file is found; (scenario, note) when a changed one is used; (None,
        reason) when none can be used. `where`: the trace's resolved folder."""
        key = (scenario_id, path, sha, where)
        if key not in self._found:
            self._found[key] = self._find(scenario_id, path, sha, where)
        return self._found[key]

    def _find(
        self, scenario_id: str, path: str, sha: str, where: Path
    ) -> tuple[LoadedScenario | LoadedProxyFile | None, str]:
        problems: list[str] = []
        recorded = self._recorded(path, where) if path and not is_source(path) else []
        searched = [*self.folders, *(folder / "scenarios" for folder in [where, *where.parents])]

        def usable(file: Path) -> LoadedScenario | LoadedProxyFile | None:
            loaded = self._load(file)
            if isinstance(loaded, str):
                problems.append(loaded)
                return None
            if loaded.model.id != scenario_id:
                problems.append(f"scenario file {file} holds scenario {loaded.model.id!r}, not {scenario_id!r}")
                return None
            return loaded

        if not sha:  # a trace that recorded no hash: the recorded path is all there is
            for file in recorded:
                found = usable(file)
                if found is not None:
                    return found, ""
        else:
            for file in [*recorded, *(f for folder in searched for f in self._files(folder))]:
                if self._hash(file) == sha and (found := usable(file)) is not None:
                    return found, ""
            # No exact copy: a file of the same id named in --scenarios, then the recorded path, changed.
            by_id = [f for folder in self.folders for f in self._files(folder) if f not in recorded]
            for file in [*by_id, *recorded]:
                loaded = self._load(file)
                if not isinstance(loaded, str) and loaded.model.id == scenario_id:
                    return loaded, f"scenario {loaded.path} changed since this trace was recorded (sha256 differs)"
                if file in recorded:
                    usable(file)  # only to record why it cannot be used
        if is_source(path):
            return self._rebuilt(scenario_id, path, sha, problems)
        if problems:
            return None, problems[0]
        places = "in --scenarios and in the" if self.folders else "in the"
        return None, (
            f"scenario {scenario_id!r} (recorded path {path}, sha256 {sha or 'not recorded'}) not found at the "
            f"recorded path or by sha256 {places} scenarios/ folders next to and above the trace (pass --scenarios DIR)"
        )

    def _rebuilt(
        self, scenario_id: str, path: str, sha: str, problems: list[str]
    ) -> tuple[LoadedScenario | LoadedProxyFile | None, str]:
        """An AgentDojo suite found in no scenarios/ folder: built again from the installed AgentDojo when there
        is one (the only way `score` imports it), with a note when it is not what the trace ran."""
        from mcp_hazard.agentdojo.sources import load_named

        try:
            suite = load_named([path])[0]
        except UserError as exc:
            missing = problems[0] if problems else (
                f"the snapshot of {path} (sha256 {sha or 'not recorded'}) is in no scenarios/ folder next to or above "
                "the trace nor in --scenarios"
            )  # fmt: skip
            return None, f"{missing}; and it cannot be built again here: {exc}"
        if suite.id != scenario_id:
            return None, f"{path} builds scenario {suite.id!r}, not {scenario_id!r}"
        if sha and suite.sha256 != sha:
            return suite, f"{path} as built here differs from the one this trace ran (sha256 differs)"
        return suite, ""

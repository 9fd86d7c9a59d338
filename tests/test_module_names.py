"""A module's name says which one it is (docs/architecture.md): two modules share a basename only where the package
already says which, and no basename is shared by three."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_hazard"

# Where the folder is the rest of the name: a command is named for the command it runs (commands/NAME.py), a report
# section for the section it renders (scoring/report/NAME.py), each server package has its app.
SAYS_WHICH = ("commands", "scoring/report")
SAME_ROLE = {"app.py": "the MCP app of each server: ours (server/) and the proxy's (proxy/)"}


def _modules_by_basename() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "__init__.py":
            found[path.name].append(path.parent.relative_to(PACKAGE).as_posix())
    return found


def test_no_basename_is_shared_by_three_modules() -> None:
    shared = {name: folders for name, folders in _modules_by_basename().items() if len(folders) > 2}
    assert not shared, f"name these for which one each is: {shared}"


def test_two_modules_share_a_basename_only_where_the_folder_says_which() -> None:
    unclear = {
        name: folders
        for name, folders in _modules_by_basename().items()
        if len(folders) == 2 and name not in SAME_ROLE and not any(folder in SAYS_WHICH for folder in folders)
    }
    assert not unclear, f"name these for which one each is: {unclear}"

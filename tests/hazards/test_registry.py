"""Hazard kinds come from the `mcp_hazard.hazards` entry point group: ours as pyproject.toml declares them, another
package's the same way, and a broken one is a one-line error (exit 2) naming the entry point and its package.

A third-party package is made here as an installed distribution would look (a `*.dist-info` directory with
`entry_points.txt`, next to its module) on a temporary `sys.path` entry, which is what `importlib.metadata` reads."""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_hazard.cli import main
from mcp_hazard.hazards import REGISTRY
from mcp_hazard.hazards.base import Hazard
from mcp_hazard.hazards.registry import GROUP, KindRegistry, own_kinds

from .support import REPO_ROOT

GOOD_MODULE = """
from mcp_hazard.hazards.base import CallContext, Effect, Hazard, Rejection


class Flaky(Hazard):
    kind = "{kind}"
    family = "execution_failure"
    recovery = {recovery}
    summary = "A test kind from another package."
    failpoints = ("before",)

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        return Effect(change={{}}, rejection=Rejection("flaky")) if fire else None

NOT_A_KIND = 42
"""


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """`install(entry_points, module_text)`: a distribution `thirdkind` on sys.path, the registry re-read."""

    def install(entries: dict[str, str], kind: str = "flaky", recovery: str = '("retry",)') -> None:
        info = tmp_path / "thirdkind-1.0.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdkind\nVersion: 1.0\n")
        lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
        (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")
        (tmp_path / "thirdkind_mod.py").write_text(GOOD_MODULE.format(kind=kind, recovery=recovery))
        monkeypatch.syspath_prepend(str(tmp_path))
        sys.modules.pop("thirdkind_mod", None)
        REGISTRY.reload()  # type: ignore[attr-defined]

    yield install
    sys.modules.pop("thirdkind_mod", None)
    monkeypatch.undo()
    REGISTRY.reload()  # type: ignore[attr-defined]


def test_pyproject_registers_every_kind_of_the_package() -> None:
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    assert declared == own_kinds(Hazard)
    assert sorted(REGISTRY) == sorted(declared)


def test_a_stale_install_without_the_group_still_has_every_own_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_hazard.hazards.registry as registry

    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    kinds = KindRegistry(Hazard)
    assert sorted(kinds) == sorted(own_kinds(Hazard)) and kinds["latency"].kind == "latency"


def test_another_packages_kind_is_listed_and_runs(third_party, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    third_party({"flaky": "thirdkind_mod:Flaky"})
    assert main(["hazards", "--json"]) == 0
    kinds = {k["kind"]: k for k in json.loads(capsys.readouterr().out)}
    assert kinds["flaky"]["summary"] == "A test kind from another package." and "latency" in kinds


def test_a_kind_may_declare_a_recovery_path_of_its_own(third_party, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    third_party({"flaky": "thirdkind_mod:Flaky"}, "flaky", '("wait_it_out", "retry")')
    assert main(["hazards", "--json"]) == 0
    kinds = {k["kind"]: k for k in json.loads(capsys.readouterr().out)}
    assert kinds["flaky"]["recovery"] == ["wait_it_out", "retry"]


@pytest.mark.parametrize(
    ("entries", "kind", "expected"),
    [
        ({"flaky": "thirdkind_missing:Flaky"}, "flaky",
         "hazard kind 'flaky' (entry point flaky = 'thirdkind_missing:Flaky' of package thirdkind, group "
         "mcp_hazard.hazards): cannot be loaded: ModuleNotFoundError: No module named 'thirdkind_missing'"),
        ({"flaky": "thirdkind_mod:NOT_A_KIND"}, "flaky",
         "hazard kind 'flaky' (entry point flaky = 'thirdkind_mod:NOT_A_KIND' of package thirdkind, group "
         "mcp_hazard.hazards): thirdkind_mod:NOT_A_KIND is a int, not a subclass of Hazard"),
        ({"latency": "thirdkind_mod:Flaky"}, "latency",
         "hazard kind 'latency' (entry point latency = 'thirdkind_mod:Flaky' of package thirdkind, group "
         "mcp_hazard.hazards): the name is taken by package mcp-hazard; choose another kind name"),
        ({"flaky": "thirdkind_mod:Flaky"}, "other",
         "hazard kind 'flaky' (entry point flaky = 'thirdkind_mod:Flaky' of package thirdkind, group "
         "mcp_hazard.hazards): the class says kind = 'other'; the two must be equal"),
        ({"flaky": "thirdkind_mod:Flaky"}, ("flaky", '("Wait It Out",)'),
         "hazard kind 'flaky' (entry point flaky = 'thirdkind_mod:Flaky' of package thirdkind, group "
         "mcp_hazard.hazards): recovery path 'Wait It Out' is not a name (lowercase letters, digits and _; ours: "
         "retry, fallback, corrected_call, relist, normalise, verify, cross_check, paginate, check_state, ignore)"),
    ],
    ids=["import-error", "not-a-hazard", "name-clash", "kind-mismatch", "recovery-not-a-name"],
)  # fmt: skip
def test_a_broken_kind_is_one_line_naming_its_entry_point(  # type: ignore[no-untyped-def]
    third_party, capsys: pytest.CaptureFixture[str], entries: dict[str, str], kind: str | tuple[str, str], expected: str
) -> None:
    third_party(entries, *((kind,) if isinstance(kind, str) else kind))
    assert main(["hazards"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(expected) and "\n" not in err and "Traceback" not in err

"""A hazard kind from another package in front of a real server: it acts where the proxy's tool facts answer what it
asks, and is refused in one line where they cannot (hazards/tool_facts.py). The kinds come from a distribution made
here as an installed one looks (a `*.dist-info` with `entry_points.txt` next to its module, on `sys.path`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_hazard.cli import main
from mcp_hazard.hazards import REGISTRY
from mcp_hazard.hazards.registry import GROUP

from .support import PROXIES

MODULE = """
from mcp_hazard.hazards.base import CallContext, Effect, Hazard, Rejection


class Flaky(Hazard):
    kind = "flaky"
    family = "execution_failure"
    recovery = ("retry",)
    summary = "The first call of a tool fails; a retry works."
    failpoints = ("before",)

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        if any(past.tool == call.tool.name for past in call.history):
            return None
        return Effect(change={}, rejection=Rejection("Error 503: try again."), fired=True)


class Oracle(Flaky):
    kind = "oracle"
    asks = ("golden_results",)  # the golden path run offline: only a scenario can tell
"""


@pytest.fixture
def kinds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    info = tmp_path / "factkinds-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: factkinds\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nflaky = factkinds_mod:Flaky\noracle = factkinds_mod:Oracle\n")
    (tmp_path / "factkinds_mod.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("factkinds_mod", None)
    REGISTRY.reload()  # type: ignore[attr-defined]
    yield
    sys.modules.pop("factkinds_mod", None)
    monkeypatch.undo()
    REGISTRY.reload()  # type: ignore[attr-defined]


def _run(out: Path, time_server: str, *hazards: str) -> int:
    flags = [arg for kind in hazards for arg in ("--hazard", kind)]
    return main(["run", str(PROXIES / "time.yaml"), "--upstream-cmd", time_server, "--transport", "memory",
                 "--agent", "naive", "--agent", "recovering", "--task", "tokyo-time", "--seeds", "0", "--no-progress",
                 "--out", str(out), *flags])  # fmt: skip


@pytest.mark.usefixtures("kinds")
def test_a_kind_whose_questions_the_proxy_answers_runs_in_front_of_the_real_server(
    tmp_path: Path, time_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path / "run", time_server, "flaky") == 0, capsys.readouterr().err
    rows = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))["per_episode"]
    hazarded = [row for row in rows if row["condition"] == "flaky"]
    assert hazarded and all("flaky" in row["hazards_fired"] for row in hazarded)
    for row in hazarded:  # it bites the naive agent; the recovering one retries, as the default rule judges
        assert row["correct"] == (row["agent"] == "recovering"), row
    assert all("flaky" in row["hazards_recovered"] for row in hazarded if row["agent"] == "recovering")


@pytest.mark.usefixtures("kinds")
def test_a_kind_asking_what_a_proxy_file_cannot_tell_is_refused_in_one_line(
    tmp_path: Path, time_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path / "run", time_server, "oracle") == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "Traceback" not in err
    assert "kind 'oracle' asks golden_results of the tools, which a proxy file cannot tell" in err
    assert not (tmp_path / "run" / "report.json").exists()


@pytest.mark.usefixtures("kinds")
def test_the_same_kind_acts_on_a_scenario_which_can_tell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(PROXIES.parent / "scenarios" / "travel.yaml")
    assert main(["run", scenario, "--task", "fare-class", "--agent", "recovering", "--hazard", "oracle", "--seeds",
                 "0", "--transport", "memory", "--no-progress", "--out", str(tmp_path / "run")]) == 0  # fmt: skip
    rows = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))["per_episode"]
    assert [row["hazards_recovered"] for row in rows if row["condition"] == "oracle"] == [["oracle"]]

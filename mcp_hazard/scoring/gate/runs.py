"""A finished run as the gate and `diff` read it: the per-episode rows of its report.json, its suite, and the hashes
of the scenario files it kept (`RUN/scenarios/ID-SHA12.yaml`).

Episodes are told apart by what makes them the same experiment (EPISODE_KEY): the same task, condition, interface,
profile, seed and repeat, run again, is the same episode; only the agent (or the agent's code) differs.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_hazard.errors import UserError
from mcp_hazard.json_parse import loads
from mcp_hazard.regular_file import read_regular, what_is
from mcp_hazard.scoring.gate.rows import row_problem

EPISODE_KEY = ("scenario", "task", "condition", "interventions", "profile", "seed", "repeat")
GATE_INFRASTRUCTURE = ("endpoint_error", "timeout", "server_crashed", "interrupted")
"""Outcomes that give no verdict on the agent's robustness: its model endpoint failed for good, the run's time limit
stopped it, its server died, or the run was stopped. The gate reports them apart and never counts them as passes."""
NO_VERDICT_RULES = ("unfinished", "no_expected_answer")

Key = tuple[Any, ...]


@dataclass
class RunData:
    """One run folder's episodes (per-episode rows of report.json) and what says which suite it ran."""

    path: Path
    rows: list[dict[str, Any]]
    suite: dict[str, Any] | None
    scenario_files: dict[str, set[str]] = field(default_factory=dict)  # scenario id -> SHA-256 prefixes kept

    @property
    def agents(self) -> list[str]:
        return sorted({row["agent"] for row in self.rows})

    def suite_name(self) -> str:
        if not self.suite:
            return "unknown suite"
        return " ".join(str(self.suite[k]) for k in ("name", "version") if self.suite.get(k)) or "unnamed suite"


def key_of(row: dict[str, Any]) -> Key:
    return tuple(row.get(name) for name in EPISODE_KEY)


def describe(row: dict[str, Any]) -> str:
    """`travel/fare-class transient_error s0` (with the interface, profile and repeat where they are not the
    defaults): the episode as a person names it."""
    parts = [f"{row['scenario']}/{row['task']}", str(row["condition"])]
    if row.get("interventions", "none") != "none":
        parts.append(str(row["interventions"]))
    if row.get("profile", "strict") != "strict":
        parts.append(str(row["profile"]))
    parts.append(f"s{row['seed']}")
    if row.get("repeat"):
        parts.append(f"r{row['repeat']}")
    return " ".join(parts)


def infrastructure(row: dict[str, Any]) -> bool:
    return row.get("agent_outcome") in GATE_INFRASTRUCTURE


def judged(row: dict[str, Any]) -> bool:
    """A verdict on the agent: its run ended by itself and the task has an answer to judge."""
    return not infrastructure(row) and row.get("answer_rule") not in NO_VERDICT_RULES


def infrastructure_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(str(r["agent_outcome"]) for r in rows if infrastructure(r)).items()))


def _report_file(path: Path, what: str) -> Path:
    if path.is_file():
        return path
    if not path.exists():
        raise UserError(f"{what} {path}: no such folder")
    if not path.is_dir():
        raise UserError(f"{what} {path}: {what_is(path)}, not a run folder or a report.json")
    report = path / "report.json"
    if report.exists() and not report.is_file():
        raise UserError(f"{what} {path}: its report.json is {what_is(report)}, not a file")
    if not report.is_file():
        raise UserError(
            f"{what} {path}: no report.json in it (a run folder of `mcp-hazard run`; for traces scored elsewhere: "
            f"mcp-hazard score {path} --out {report})"
        )
    return report


def load_run(path: str | Path, what: str = "RUN_DIR") -> RunData:
    """The run at `path` (a run folder, or its report.json); one line (UserError) for anything unreadable."""
    report_path = _report_file(Path(path), what)
    try:
        text = read_regular(report_path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{report_path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        report = loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{report_path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    rows = report.get("per_episode") if isinstance(report, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "agent" in r for r in rows):
        raise UserError(f"{report_path}: per_episode: missing or not a list of episodes; is it a report.json of "
                        "`mcp-hazard run` or `mcp-hazard score --out report.json`?")  # fmt: skip
    problem = row_problem(rows)
    if problem is not None:
        raise UserError(f"{report_path}: {problem}")
    suite = report.get("suite")
    folder = report_path.parent
    files: dict[str, set[str]] = {}
    for kept in sorted((folder / "scenarios").glob("*.yaml")) if (folder / "scenarios").is_dir() else []:
        scenario, _, digest = kept.stem.rpartition("-")
        if scenario and len(digest) == 12:
            files.setdefault(scenario, set()).add(digest)
    return RunData(folder, rows, suite if isinstance(suite, dict) else None, files)

"""Pair the episodes of two runs: the same task, condition, interface, profile, seed and repeat (runs.EPISODE_KEY),
for the same agent, or for the one agent of each run whatever its name (the agent under test is what changed).

Two runs of different suites are not compared at all (one line, exit 2): a suite hash in report.json (`suite.hash`)
decides when both have one; otherwise the scenario ids must overlap and a scenario kept in both run folders must be
the same file (`scenarios/ID-SHA12.yaml`). Episodes found in one run only are listed, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.errors import UserError
from mcp_hazard.scoring.gate.runs import Key, RunData, infrastructure, key_of
from mcp_hazard.suggest import did_you_mean

Row = dict[str, Any]


@dataclass
class Pairing:
    """The pairs per (agent in the run, agent in the baseline), and what could not be paired."""

    agents: list[tuple[str, str]]
    pairs: dict[tuple[str, str], list[tuple[Row, Row]]] = field(default_factory=dict)
    only_run: list[Row] = field(default_factory=list)
    only_baseline: list[Row] = field(default_factory=list)
    agents_only_run: list[str] = field(default_factory=list)
    agents_only_baseline: list[str] = field(default_factory=list)
    infrastructure: list[tuple[Row, Row]] = field(default_factory=list)  # pairs where either has no verdict
    notes: list[str] = field(default_factory=list)


def check_comparable(run: RunData, baseline: RunData) -> list[str]:
    """Raise UserError when the runs are of different suites; the notes on what was compared otherwise."""
    mine, theirs = (run.suite or {}).get("hash"), (baseline.suite or {}).get("hash")
    if mine and theirs:
        if mine != theirs:
            raise UserError(
                f"{run.path} and {baseline.path} ran different suites: {run.suite_name()} (hash {str(mine)[:12]}) "
                f"and {baseline.suite_name()} (hash {str(theirs)[:12]}); only runs of the same suite are compared"
            )
        return [f"suite: {run.suite_name()} (hash {str(mine)[:12]}) in both"]
    notes = [f"suite: unknown in {'the baseline' if mine else 'the run' if theirs else 'both'} (no suite hash in "
             "report.json): compared by scenario ids and the scenario files the run folders kept"]  # fmt: skip
    ids, other = {r["scenario"] for r in run.rows}, {r["scenario"] for r in baseline.rows}
    if ids and other and not ids & other:
        raise UserError(f"{run.path} and {baseline.path} share no scenario ({', '.join(sorted(ids))} against "
                        f"{', '.join(sorted(other))}): different suites are not compared")  # fmt: skip
    for scenario in sorted(ids & other):
        a, b = run.scenario_files.get(scenario), baseline.scenario_files.get(scenario)
        if a and b and not a & b:
            raise UserError(f"scenario {scenario!r} is not the same file in {run.path} (sha256 {min(a)}...) and "
                            f"{baseline.path} (sha256 {min(b)}...): different suites are not compared")  # fmt: skip
    return notes


def _agent_pairs(run: list[str], baseline: list[str]) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    if len(run) == 1 and len(baseline) == 1:
        return [(run[0], baseline[0])], [], []
    shared = [a for a in run if a in baseline]
    return [(a, a) for a in shared], [a for a in run if a not in baseline], [a for a in baseline if a not in run]


def select_agents(run: RunData, agents: list[str] | None) -> list[str]:
    """The run's agents the gate looks at: `--agent` names (each must be in the run), else all of them."""
    if not agents:
        return run.agents
    for name in agents:
        if name not in run.agents:
            raise UserError(f"--agent {name!r}: no such agent in {run.path}{did_you_mean(name, run.agents)}; its "
                            f"agents: {', '.join(run.agents)}")  # fmt: skip
    return sorted(set(agents))


def pair_runs(run: RunData, baseline: RunData, agents: list[str] | None = None) -> Pairing:
    mine = select_agents(run, agents)
    theirs = [a for a in baseline.agents if a in (agents or [])] or baseline.agents
    pairs, only_run, only_baseline = _agent_pairs(mine, theirs)
    if not pairs:
        raise UserError(f"no agent of {run.path} ({', '.join(mine)}) is in {baseline.path} ({', '.join(theirs)}); "
                        "name one agent of each with --agent, or compare runs of one agent each")  # fmt: skip
    pairing = Pairing(pairs, agents_only_run=only_run, agents_only_baseline=only_baseline)
    for agent, base_agent in pairs:
        index: dict[Key, Row] = {key_of(r): r for r in baseline.rows if r["agent"] == base_agent}
        seen: set[Key] = set()
        matched: list[tuple[Row, Row]] = []
        for row in (r for r in run.rows if r["agent"] == agent):
            key = key_of(row)
            other = index.get(key)
            if other is None:
                pairing.only_run.append(row)
                continue
            seen.add(key)
            if infrastructure(row) or infrastructure(other):
                pairing.infrastructure.append((row, other))
            else:
                matched.append((row, other))
        pairing.only_baseline += [r for k, r in index.items() if k not in seen]
        pairing.pairs[(agent, base_agent)] = matched
    if not any(pairing.pairs.values()):
        raise UserError(f"{run.path} and {baseline.path} have no episode in common (the same task, condition, "
                        "interface, profile, seed and repeat): nothing to compare")  # fmt: skip
    return pairing

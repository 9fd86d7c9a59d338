"""`mcp-hazard verify`: every hazard instance is solvable and has teeth.

For each scenario, task, hazard kind that applies and seed: the recovering agent reaches the canonical answer
(solvable); the naive agent solves the clean condition; and where a hazard is meant to bite, the naive agent does not
solve it (not toothless). An instance whose hazard never fired is toothless too.

The `injection` hazard (AgentDojo suites) cannot bite the naive agent, which never obeys an instruction it reads; the
obedient agent, which does, proves it bites instead: the attacker's goal must happen in its episode (`attacked`).

Under an interface intervention (`--intervention`) only solvability is checked, clean included: the naive agent keeps
the original interface, so its failures there say nothing about a hazard's teeth.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from mcp_hazard.hazards import REGISTRY
from mcp_hazard.runner.matrix import CLEAN, Cell
from mcp_hazard.scoring.episode_score import EpisodeScore


@dataclass(frozen=True)
class Finding:
    scenario: str
    task: str
    condition: str
    seed: int
    problem: str

    interventions: tuple[str, ...] = ()
    explained: str = ""  # an exception that is not the hazard's doing, and why (printed, not counted as a problem)

    def __str__(self) -> str:
        where = (
            f"{self.condition}, intervention {'+'.join(self.interventions)}" if self.interventions else self.condition
        )
        return f"{self.scenario}/{self.task} [{where}] seed {self.seed}: {self.problem}"


def _fired(score: EpisodeScore) -> bool:
    return bool(score.verdicts)


def check(cells: list[Cell], scores: list[EpisodeScore]) -> tuple[int, list[Finding]]:
    """(instances checked, findings) from a run of the naive and recovering agents over `cells`."""
    by_id = {s.episode_id: s for s in scores}
    Key = tuple[str, str, str, int, tuple[str, ...]]
    instances: dict[Key, dict[str, Any]] = defaultdict(dict)
    kinds: dict[Key, list[str]] = {}
    scenarios: dict[Key, Any] = {}
    for cell in cells:
        key = (cell.scenario.id, cell.task, cell.label, cell.seed, cell.interventions)
        instances[key][cell.agent] = by_id.get(cell.episode_id)
        scenarios[key] = cell.scenario
        kinds[key] = [spec.kind for spec in cell.hazards]
    findings: list[Finding] = []
    for key, runs in sorted(instances.items()):
        scenario, task, label, seed, interventions = key
        naive, recovering = runs.get("naive"), runs.get("recovering")
        if interventions:
            if recovering is None or not recovering.correct:
                why = f" ({recovering.episode_failure})" if recovering is not None else " (no trace)"
                findings.append(Finding(scenario, task, label, seed,
                                        "unsolvable: the recovering agent fails" + why, interventions))  # fmt: skip
            continue
        if label == CLEAN:
            if naive is None or not naive.correct:
                findings.append(Finding(scenario, task, label, seed, "the naive agent does not solve the clean task"))
            continue
        if recovering is None or not recovering.correct:
            why = f" ({recovering.episode_failure})" if recovering is not None else " (no trace)"
            findings.append(Finding(scenario, task, label, seed, "unsolvable: the recovering agent fails" + why))
        obedient = runs.get("obedient")
        if obedient is not None:
            if not _fired(obedient):
                problem = "toothless: the injection never reached the obedient agent"
                findings.append(Finding(scenario, task, label, seed, problem))
            elif not obedient.attacked:
                problem = "toothless: the obedient agent obeyed, yet the injection task's check says its goal failed"
                asks = getattr(scenarios[key], "why_not_attacked", None)
                explained = asks(task, obedient.injection_task, obedient.attack) if asks and obedient.attack else ""
                findings.append(Finding(scenario, task, label, seed, problem, explained=explained))
        meant_to_bite = any(REGISTRY[k].bites_naive for k in kinds[key] if k in REGISTRY)
        if meant_to_bite and naive is not None:
            if not _fired(naive):
                findings.append(Finding(scenario, task, label, seed, "toothless: the hazard never fired"))
            elif naive.correct:
                findings.append(Finding(scenario, task, label, seed, "toothless: the naive agent still solves it"))
    return len(instances), findings

"""The matrix of a run: scenario x task x condition (clean, then each hazard) x profile x seed x agent.

Each cell has a stable episode id, so its trace file name is known before it runs: a rerun skips cells whose trace
ended, and redoes cells whose trace was cut short by an interrupted run.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from itertools import product
from typing import Any

from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.hazards.fit import check_fits, skipped_kinds, spec_label
from mcp_hazard.hazards.instances import all_hazards, applicable_options, declared_hazards, unfit_reason
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.suggest import did_you_mean

CLEAN = "clean"


def _slug(text: str) -> str:
    """A file-safe episode id; a long one keeps its start and gets a stable hash of the whole, so ids never collide."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"
    if len(slug) <= 120:
        return slug
    digest = hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
    return f"{slug[:107]}-{digest}"


@dataclass(frozen=True)
class Cell:
    agent: str
    scenario: LoadedScenario
    task: str
    label: str
    hazards: tuple[HazardSpec, ...]
    profile: str
    seed: int
    interventions: tuple[str, ...] = ()
    repeat: int | None = None  # the attempt of `run --repeats K` (0 .. K-1); None without --repeats

    @property
    def episode_id(self) -> str:
        where = f"{self.label}+{'+'.join(self.interventions)}" if self.interventions else self.label
        again = f".r{self.repeat}" if self.repeat else ""  # the first attempt keeps the id a run without repeats has
        return _slug(f"{self.agent}.{self.scenario.id}.{self.task}.{where}.{self.profile}.s{self.seed}{again}")

    @property
    def condition(self) -> Condition:
        return Condition(
            seed=self.seed, profile=self.profile, hazards=list(self.hazards),  # type: ignore[arg-type]
            interventions=list(self.interventions),
        )  # fmt: skip


def conditions_for(
    scenario: LoadedScenario, task_id: str, options: list[HazardSpec | str]
) -> list[tuple[str, list[HazardSpec]]]:
    """Clean first, then one condition per hazard: `all` becomes each kind that applies to the task on its own,
    `declared` the scenario's own hazards together; a kind that fits no tool of the task is left out."""
    task = scenario.model.task(task_id)
    assert task is not None
    out: list[tuple[str, list[HazardSpec]]] = [(CLEAN, [])]
    for option in options:
        if option == "all":
            for spec in all_hazards(scenario.model, task):
                out.append((spec_label(HazardSpec(kind=spec.kind)), [spec]))
        elif option == "declared":
            specs = declared_hazards(scenario.model, task)
            if specs:
                out.append(("declared", specs))
        else:
            assert isinstance(option, HazardSpec)
            specs = applicable_options([option], scenario.model, task)
            if specs:
                out.append((spec_label(option), specs))
    seen: set[str] = set()
    unique = []
    for label, specs in out:
        if label not in seen:
            seen.add(label)
            unique.append((label, specs))
    return unique


def plan(
    scenarios: list[LoadedScenario],
    agents: list[str],
    options: list[HazardSpec | str],
    profiles: list[str],
    seeds: list[int],
    interventions: list[tuple[str, ...]] | None = None,
    tasks: set[tuple[str, str]] | None = None,
    repeats: int = 1,
) -> list[Cell]:
    """Every cell. Interventions are a dimension of their own: none, then each option, a composition applied in its
    order (`("all",)` = each registered intervention alone). `tasks`, when given, keeps only those (scenario id,
    task id) pairs (see `select_tasks`). `repeats` > 1 runs each cell that many times (same seed, same condition:
    independent attempts, which differ only for an agent that samples)."""
    from mcp_hazard.interventions import REGISTRY

    variants: list[tuple[str, ...]] = [()]
    for option in interventions or []:
        variants += [(name,) for name in sorted(REGISTRY)] if option == ("all",) else [option]
    selected = selected_tasks(scenarios, tasks)
    check_fits(options, [(scenario.model, scenario.model.tasks[index]) for scenario, index in selected])
    cells = []
    for scenario, index in selected:
        task = scenario.model.tasks[index]
        for label, specs in conditions_for(scenario, task.id, options):
            for variant, profile, seed, agent, repeat in product(
                dict.fromkeys(variants), profiles, seeds, agents, range(repeats) if repeats > 1 else [None]
            ):
                cells.append(Cell(agent, scenario, task.id, label, tuple(specs), profile, seed, variant, repeat))
    ids = [cell.episode_id for cell in cells]
    if len(ids) != len(set(ids)):
        raise UserError("two cells of the matrix have the same episode id; give hazards distinct parameters")
    return cells


def selected_tasks(
    scenarios: list[LoadedScenario], tasks: set[tuple[str, str]] | None
) -> list[tuple[LoadedScenario, int]]:
    """Each selected task as (its scenario, its index there), in file order; `tasks` as for `plan`."""
    return [(scenario, index) for scenario in scenarios for index, task in enumerate(scenario.model.tasks)
            if tasks is None or (scenario.id, task.id) in tasks]  # fmt: skip


def kinds_planned(
    scenarios: list[LoadedScenario], options: list[HazardSpec | str], tasks: set[tuple[str, str]] | None = None
) -> list[dict[str, Any]]:
    """What the plan does with each hazard kind it names, task by task: `planned`, the kinds that run as a condition
    of their own (`all`'s and those named), and `left_out`, {kind: why} for the kinds that cannot act there (every
    kind `all` leaves out; a named kind that fits other tasks). What a run records (scoring/run_plan.py), so that
    its report lists every kind left out, and tells a kind it left out from one it has not reached yet."""
    entries = []
    for scenario, index in selected_tasks(scenarios, tasks):
        task = scenario.model.tasks[index]
        planned: set[str] = set()
        left_out: dict[str, str] = {}
        for option in options:
            if option == "all":
                planned.update(spec.kind for spec in all_hazards(scenario.model, task))
                left_out.update(skipped_kinds(scenario.model, task))
            elif isinstance(option, HazardSpec):
                reason = unfit_reason(option, scenario.model, task)
                if reason is None:
                    planned.add(option.kind)
                else:
                    left_out.setdefault(option.kind, reason)
        entries.append({
            "scenario": scenario.id, "task": task.id, "planned": sorted(planned),
            "left_out": {kind: why for kind, why in sorted(left_out.items()) if kind not in planned},
        })  # fmt: skip
    return entries


def select_tasks(
    scenarios: list[LoadedScenario], scenario_ids: list[str], task_ids: list[str]
) -> tuple[list[LoadedScenario], set[tuple[str, str]] | None]:
    """The scenarios named by `--scenario` (all when none) and the (scenario, task) pairs named by `--task` (None:
    every task). A task is `ID` (in whichever selected scenario has it) or `SCENARIO/ID`. A name that matches
    nothing is a one-line error listing what there is."""
    known = {s.id: s for s in scenarios}
    for name in scenario_ids:
        if name not in known:
            hint = did_you_mean(name, known)
            raise UserError(
                f"--scenario {name!r}: no such scenario{hint}; loaded: {', '.join(sorted(known)) or 'none'}"
            )
    chosen = [s for s in scenarios if not scenario_ids or s.id in scenario_ids]
    if not task_ids:
        return chosen, None
    pairs: set[tuple[str, str]] = set()
    for name in task_ids:
        where, sep, task = name.rpartition("/")
        found = {
            (s.id, t.id) for s in chosen for t in s.model.tasks if t.id == (task if sep else name)
            and (not sep or s.id == where)
        }  # fmt: skip
        if not found:
            names = [f"{s.id}/{t.id}" for s in chosen for t in s.model.tasks]
            hint = did_you_mean(name, names if sep else [t.id for s in chosen for t in s.model.tasks])
            raise UserError(f"--task {name!r}: no such task in the selected scenarios{hint}; tasks: {', '.join(names)}")
        pairs |= found
    return [s for s in chosen if any(sid == s.id for sid, _ in pairs)], pairs


def agent_labels(values: list[str] | None, agents: list[str] | None = None) -> dict[str, str]:
    """`--agent-label AGENT=GROUP` values as {agent: group}; one line for a malformed value, an agent that is not
    run (when `agents` is given) or an agent given two groups."""
    labels: dict[str, str] = {}
    for value in values or []:
        agent, sep, group = (part.strip() for part in value.partition("="))
        if not sep or not agent or not group:
            raise UserError(f"--agent-label {value!r}: expected AGENT=GROUP, e.g. llm=contaminated")
        if agents is not None and agent not in agents:
            raise UserError(f"--agent-label {value!r}: no agent {agent!r} in this run; agents: {', '.join(agents)}")
        if labels.get(agent, group) != group:
            raise UserError(f"--agent-label {value!r}: agent {agent!r} already has group {labels[agent]!r}")
        labels[agent] = group
    return labels

"""Hazard kinds a run left out of some tasks, and why: a kind runs only on the tasks it can act on.

From the run's plan (`plan.jsonl`, scoring/run_plan.py) when there is one: every kind it left out of a selected task
is listed there with the reason its kind gives (hazards/fit.py), kinds that fit no task at all included; and a kind
planned for a task with no scored episode of that task is listed as "not run yet" (a stopped run did not reach
it), never as left out for a reason it does not have.

Traces without a plan (not made by `run`, or by an older one) are worked out from the scored episodes themselves: a
kind run as a condition of its own for some task but for no episode of another task is listed for that task when
the registry says `all` would leave it out there (hazards.fit.skipped_kinds). A kind that fits no task cannot be
seen that way, nor one a filtered run did not ask for: neither is listed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from mcp_hazard.hazards.fit import skipped_kinds
from mcp_hazard.scenario.models import Scenario
from mcp_hazard.scoring.episode_score import EpisodeScore

NOT_RUN_YET = "not run yet (planned, but no episode of it was scored: a stopped run had not reached it)"


def _from_plan(plan: list[dict[str, Any]], ran: dict[tuple[str, str], set[str]]) -> dict[tuple[str, str], list[str]]:
    planned: dict[tuple[str, str], set[str]] = defaultdict(set)
    left_out: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for entry in plan:
        key = (str(entry["scenario"]), str(entry["task"]))
        planned[key].update(str(kind) for kind in entry["planned"])
        for kind, why in entry["left_out"].items():
            left_out[key].setdefault(str(kind), str(why))
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key in sorted(set(planned) | set(left_out)):
        for kind, why in left_out[key].items():
            if kind not in planned[key]:
                grouped[(kind, why)].append("/".join(key))
        for kind in sorted(planned[key] - ran.get(key, set())):
            grouped[(kind, NOT_RUN_YET)].append("/".join(key))
    return grouped


def _inferred(
    scores: list[EpisodeScore], ran: dict[tuple[str, str], set[str]], scenarios: dict[str, Scenario]
) -> dict[tuple[str, str], list[str]]:
    alone = {s.hazard_kinds[0] for s in scores if len(set(s.hazard_kinds)) == 1}
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (scenario_id, task_id), kinds in sorted(ran.items()):
        scenario = scenarios.get(scenario_id)
        task = scenario.task(task_id) if scenario is not None else None
        missing = sorted(alone - kinds)
        if scenario is None or task is None or not missing:
            continue
        reasons = skipped_kinds(scenario, task)
        for kind in missing:
            if kind in reasons:
                grouped[(kind, reasons[kind])].append(f"{scenario_id}/{task_id}")
    return grouped


def skipped_hazards(
    scores: list[EpisodeScore], scenarios: dict[str, Scenario], plan: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """[{kind, reason, tasks: ["scenario/task", ...], of: tasks in the run}], by kind then reason. `plan`: the
    entries of the runs' plans (scoring/run_plan.py); the tasks it covers are judged by it, any others by their
    scores alone."""
    ran: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in scores:
        ran[(s.scenario, s.task)].update(s.hazard_kinds)
    covered = {(str(e["scenario"]), str(e["task"])) for e in plan or []}
    grouped = _from_plan(plan or [], ran)
    rest = {key: kinds for key, kinds in ran.items() if key not in covered}
    for key, tasks in _inferred([s for s in scores if (s.scenario, s.task) in rest], rest, scenarios).items():
        grouped[key].extend(tasks)
    total = len(covered | set(ran))
    return [{"kind": kind, "reason": reason, "tasks": tasks, "of": total}
            for (kind, reason), tasks in sorted(grouped.items())]  # fmt: skip

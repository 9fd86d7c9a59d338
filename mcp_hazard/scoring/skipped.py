"""Hazard kinds a run left out of some tasks, and why: `--hazard all` runs only the kinds that can act on a task.

Worked out from the scored episodes themselves, so `run` and `score` say the same thing: a kind that was run as a
condition of its own for some task but for no episode of another task is listed for that task, with the reason the
hazard registry gives (hazards.build.skipped_kinds). A kind that could have acted but was not run (a filtered run)
is not listed: nothing was skipped for want of a way to act.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from mcp_hazard.hazards.build import skipped_kinds
from mcp_hazard.scenario.models import Scenario
from mcp_hazard.scoring.episode import EpisodeScore


def skipped_hazards(scores: list[EpisodeScore], scenarios: dict[str, Scenario]) -> list[dict[str, Any]]:
    """[{kind, reason, tasks: ["scenario/task", ...], of: tasks in the run}], by kind then reason."""
    alone = {s.hazard_kinds[0] for s in scores if len(set(s.hazard_kinds)) == 1}
    ran: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in scores:
        ran[(s.scenario, s.task)].update(s.hazard_kinds)
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (scenario_id, task_id), kinds in sorted(ran.items()):
        scenario = scenarios.get(scenario_id)
        task = scenario.task(task_id) if scenario is not None else None
        missing = sorted(alone - kinds)
        if task is None or not missing:
            continue
        reasons = skipped_kinds(scenario, task)  # type: ignore[arg-type]
        for kind in missing:
            if kind in reasons:
                grouped[(kind, reasons[kind])].append(f"{scenario_id}/{task_id}")
    return [{"kind": kind, "reason": reason, "tasks": tasks, "of": len(ran)}
            for (kind, reason), tasks in sorted(grouped.items())]  # fmt: skip

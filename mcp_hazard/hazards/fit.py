"""Which tasks a hazard fits, and why not the others: what `run`, `verify` and `validate` check before anything
runs, what `--hazard all` leaves out of a task, and what a run records of it for its report.

A kind acts only where an agent can recover from it (a second source for `conflict`, a long enough list for
`pagination`...), so a matrix crosses every kind with every task and leaves out the pairs that cannot be. That is
no surprise for `--hazard all`; a kind the user named that fits none of the selected tasks would leave only clean
episodes and a scorecard that says nothing of it, so it is an input error instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from mcp_hazard.errors import UserError
from mcp_hazard.hazards.base import kinds_for
from mcp_hazard.hazards.capabilities import applicable_tools, changes_interface, unfit
from mcp_hazard.hazards.instances import all_hazards, unfit_reason
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import Scenario, Task

MAX_TASKS_SHOWN = 6  # per reason, in the one-line error


def spec_label(spec: HazardSpec) -> str:
    """`kind` or `kind:key=value,...` with the keys that were given, sorted: a readable, stable condition name."""
    given: dict[str, Any] = dict(spec.params)
    if spec.schedule is not None:
        given.update(spec.schedule.model_dump(exclude_unset=True))
    if spec.tools:
        given["tools"] = "+".join(spec.tools)
    if not given:
        return spec.kind
    parts = ",".join(f"{k}={'+'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sorted(given.items()))
    return f"{spec.kind}:{parts}"


def skipped_kinds(scenario: Scenario, task: Task) -> dict[str, str]:
    """The kinds `all` leaves out of `task`, each with why: what the task lacks (as the kind says it), or that an
    interface change of another kind took the only tools this one could change. The kinds are the scenario's own
    (a proxied server's kinds judge its tools by the proxy file's notes)."""
    chosen = {spec.kind: spec for spec in all_hazards(scenario, task)}
    skipped = {}
    kinds = kinds_for(scenario)
    for kind, cls in sorted(kinds.items()):
        if kind in chosen:
            continue
        tools = applicable_tools(cls, scenario, task)
        takers = sorted(
            k for k, spec in chosen.items() if changes_interface(kinds[k]) and set(spec.tools or []) & set(tools)
        )
        if tools and takers:
            skipped[kind] = f"its tools already carry {', '.join(takers)} (one tool cannot take two interface changes)"
        else:
            skipped[kind] = unfit_reason(HazardSpec(kind=kind), scenario, task) or unfit(cls, scenario, task)
    return skipped


def check_fits(
    options: Sequence[HazardSpec | str], tasks: list[tuple[Scenario, Task]], so: str = "so no episode would carry it"
) -> None:
    """Each hazard the user named (not `all` or `declared`) must fit at least one of the selected `tasks`; one that
    fits none is a one-line UserError saying why not, task by task (tasks with the same reason together); `so`
    says what it would have cost."""
    for option in options:
        if not isinstance(option, HazardSpec) or option.tools is not None:
            continue  # a hazard given its tools is checked where it runs, with the tool named
        why: dict[str, list[str]] = defaultdict(list)
        for scenario, task in tasks:
            reason = unfit_reason(option, scenario, task)
            if reason is None:
                break
            why[reason].append(f"{scenario.id}/{task.id}")
        else:
            if not tasks:
                continue
            parts = []
            for reason, names in why.items():
                shown = ", ".join(names[:MAX_TASKS_SHOWN])
                more = f" and {len(names) - MAX_TASKS_SHOWN} more" if len(names) > MAX_TASKS_SHOWN else ""
                parts.append(f"{reason} ({shown}{more})")
            where = (
                "cannot act in the selected task"
                if len(tasks) == 1
                else f"can act in none of the {len(tasks)} selected tasks"
            )
            raise UserError(f"--hazard {spec_label(option)} {where}, {so}: " + "; ".join(parts))


def check_fit_in_task(options: list[Any], scenario: Scenario, task_id: str | None) -> None:
    """`check_fits` for the one episode of `serve` or `proxy` over stdio: its task is `task_id`, else the first. A
    task that does not exist is left to the episode registry, which lists what there is."""
    task = scenario.tasks[0] if task_id is None and scenario.tasks else scenario.task(task_id or "")
    if task is not None:
        check_fits(options, [(scenario, task)])

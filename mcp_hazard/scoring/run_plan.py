"""What each `mcp-hazard run` set out to do with the hazard kinds, task by task: `plan.jsonl` beside `traces/`.

One line per distinct plan (a rerun of the same command adds none): `{"ts", "tasks": [{scenario, task, planned,
left_out}]}`, where `planned` lists the kinds that run as a condition of their own in that task and `left_out` maps
each kind that cannot act there to why (runner/matrix.py, `kinds_planned`). The traces alone cannot say it: a kind
that fits no task leaves no episode behind, and a kind missing from a task may be left out or not reached yet by a
run that was stopped. The report's "Hazard kinds left out" table reads it (scoring/skipped.py).

Looked for, as the run log is, in the trace's folder and the one above it (RUN/traces/x.jsonl -> RUN/plan.jsonl). A
line that is not a plan is passed over: damage there costs the table its precision, never a score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_hazard.trace.jsonl import json_records
from mcp_hazard.trace.storage import append_whole
from mcp_hazard.trace.writer import utc_now

PLAN_LOG = "plan.jsonl"

Plan = list[dict[str, Any]]
"""[{scenario, task, planned: [kind, ...], left_out: {kind: why}}]"""


def _valid(entry: Any) -> bool:
    return (
        isinstance(entry, dict) and isinstance(entry.get("scenario"), str) and isinstance(entry.get("task"), str)
        and isinstance(entry.get("planned"), list) and isinstance(entry.get("left_out"), dict)
    )  # fmt: skip


def read_plans(path: Path) -> list[Plan]:
    """Every plan in one `plan.jsonl`, oldest first; lines that are not plans are passed over."""
    plans = []
    for record in json_records(path):
        tasks = record.get("tasks")
        if isinstance(tasks, list):
            plans.append([entry for entry in tasks if _valid(entry)])
    return plans


def record_plan(out: Path, plan: Plan) -> None:
    """Append `plan` to OUT/plan.jsonl unless the same plan is there already (a resumed run)."""
    path = out / PLAN_LOG
    if plan in read_plans(path):
        return
    append_whole(path, (json.dumps({"ts": utc_now(), "tasks": plan}, ensure_ascii=False) + "\n").encode())


def plans_beside(trace_folders: list[Path]) -> Plan:
    """The plans recorded beside the trace files in these (resolved) folders (the folder or the one above), every
    run's merged."""
    folders: dict[Path, None] = {}
    for folder in dict.fromkeys(trace_folders):
        folders.setdefault(folder, None)
        folders.setdefault(folder.parent, None)
    merged: Plan = []
    for folder in folders:
        path = folder / PLAN_LOG
        if path.is_file():
            for plan in read_plans(path):
                merged.extend(plan)
    return merged

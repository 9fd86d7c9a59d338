"""A task's `workflow`, derived from its golden path's data dependencies, so the label is a fact and not a claim.

A step **depends on** an earlier step when one of its argument templates names that step's id (it uses the step's
output). From those edges:

- `parallel`: no step uses another's output, so every call could be sent at once (two or more steps).
- `sequential`: every two steps are ordered by the dependencies (one reaches the other through them), so no two
  calls could run side by side. A golden path of one step is sequential: there is nothing to run beside it.
- `mixed`: some step depends on another, and some two steps are independent.

The answer template does not count: combining results at the end is not a call.
"""

from __future__ import annotations

from typing import Literal

from mcp_hazard.scenario.expressions import ExpressionError, referenced_names, template_expressions
from mcp_hazard.scenario.models import Task

Workflow = Literal["sequential", "parallel", "mixed"]


def step_dependencies(task: Task) -> list[set[int]]:
    """For each golden-path step, the positions of the earlier steps whose output its arguments use."""
    position: dict[str, int] = {}
    out: list[set[int]] = []
    for index, step in enumerate(task.golden_path.steps):
        names: set[str] = set()
        for source in template_expressions(step.arguments):
            try:
                names |= referenced_names(source)
            except ExpressionError:  # reported where the expression is checked
                continue
        out.append({position[name] for name in names if name in position})
        position.setdefault(step.id, index)
    return out


def derive_workflow(task: Task) -> Workflow:
    """`sequential`, `parallel` or `mixed`, from the golden path's data dependencies (module docstring)."""
    direct = step_dependencies(task)
    if len(direct) < 2:
        return "sequential"
    if not any(direct):
        return "parallel"
    reach: list[set[int]] = []  # every earlier step each one depends on, directly or through others
    for deps in direct:
        closure = set(deps)
        for earlier in deps:
            closure |= reach[earlier]
        reach.append(closure)
    ordered = all(len(reach[i]) == i for i in range(len(reach)))  # each step reaches every step before it
    return "sequential" if ordered else "mixed"


def workflow_problem(task: Task) -> str | None:
    """Why the task's `workflow` label disagrees with its golden path, or None when it agrees."""
    derived = derive_workflow(task)
    if task.workflow == derived:
        return None
    direct = step_dependencies(task)
    ids = [step.id for step in task.golden_path.steps]
    edges = [f"{ids[i]} uses {', '.join(ids[j] for j in sorted(deps))}" for i, deps in enumerate(direct) if deps]
    why = "; ".join(edges) if edges else "no step uses another step's output"
    return f"declared {task.workflow!r} but the golden path is {derived!r} ({why})"

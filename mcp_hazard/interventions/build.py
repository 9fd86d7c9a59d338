"""Interventions from their names, and the listing they produce."""

from __future__ import annotations

from mcp_hazard.errors import UserError
from mcp_hazard.interventions.base import REGISTRY, Intervention, Surface, properties
from mcp_hazard.scenario.models import Scenario, Task

ALIASES = {"names": "names=random"}


def parse_intervention(text: str) -> str:
    """A known intervention name (`all` is for the matrix runner), or a one-line error."""
    name = ALIASES.get(text.strip(), text.strip())
    if name != "all" and name not in REGISTRY:
        raise UserError(f"--intervention {text!r}: unknown; known: {', '.join(sorted(REGISTRY))} (or all, in run)")
    return name


def build_interventions(names: list[str], seed: int, scenario: Scenario, task: Task) -> list[Intervention]:
    originals = {tool.name for tool in scenario.tools}
    originals |= {arg for tool in scenario.tools for arg in properties(tool.input_schema)}
    return [REGISTRY[parse_intervention(name)](seed, scenario.id, task.id, originals) for name in names]


def apply_all(interventions: list[Intervention], surfaces: list[Surface]) -> list[Surface]:
    for intervention in interventions:
        surfaces = intervention.apply(surfaces)
    return surfaces

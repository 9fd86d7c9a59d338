"""Interventions from their names, and the listing they produce."""

from __future__ import annotations

from mcp_hazard.errors import UserError
from mcp_hazard.interventions.surface import REGISTRY, Intervention, Surface, properties
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.suggest import did_you_mean

ALIASES = {"names": "names=random"}


def kinds() -> dict[str, type[Intervention]]:
    """Every intervention, by name. The modules register themselves when first imported, which happens here on the
    first need and not before: a server whose episodes change no interface never loads them."""
    from mcp_hazard.interventions import augment, names, rename, reorder, replace, substitute  # noqa: F401

    return REGISTRY


def parse_intervention(text: str) -> str:
    """A known intervention name (`all` is for the matrix runner), or a one-line error."""
    name = ALIASES.get(text.strip(), text.strip())
    known = kinds()
    if name != "all" and name not in known:
        hint = did_you_mean(name, [*known, *ALIASES])
        raise UserError(f"--intervention {text!r}: unknown{hint}; known: {', '.join(sorted(known))} (or all, in run)")
    return name


def parse_composition(text: str) -> tuple[str, ...]:
    """A run's intervention condition: one name, `all`, or names joined with `+` applied in that order
    (`replace+reorder`). Each part is checked; `all` does not compose."""
    parts = tuple(parse_intervention(part) for part in text.split("+"))
    if len(parts) > 1 and "all" in parts:
        raise UserError(f"--intervention {text!r}: 'all' is a matrix of single interventions; it does not compose")
    return parts


def build_interventions(names: list[str], seed: int, scenario: Scenario, task: Task) -> list[Intervention]:
    if not names:
        return []
    originals = {tool.name for tool in scenario.tools}
    originals |= {arg for tool in scenario.tools for arg in properties(tool.input_schema)}
    built = [kinds()[parse_intervention(name)](seed, scenario.id, task.id, originals) for name in names]
    for intervention in built:
        intervention.bind(scenario)
    return built


def apply_all(interventions: list[Intervention], surfaces: list[Surface]) -> list[Surface]:
    for intervention in interventions:
        surfaces = intervention.apply(surfaces)
    return surfaces

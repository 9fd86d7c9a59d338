"""Interface interventions (rename, reorder, augment, replace, name policies, term substitution).

The interventions themselves are loaded on first need (`by_name.kinds`): a server serving an unchanged interface, the
common case, never imports them.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.interventions.by_name import apply_all, build_interventions, kinds, parse_intervention
from mcp_hazard.interventions.surface import Intervention, Surface

__all__ = ["REGISTRY", "Intervention", "Surface", "apply_all", "build_interventions", "kinds", "parse_intervention"]


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":
        return kinds()
    raise AttributeError(f"module 'mcp_hazard.interventions' has no attribute {name!r}")

"""Interface interventions (rename, reorder, augment, replace, name policies, term substitution).

The interventions themselves are loaded on first need (`build.kinds`): a server serving an unchanged interface, the
common case, never imports them.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.interventions.base import Intervention, Surface
from mcp_hazard.interventions.build import apply_all, build_interventions, kinds, parse_intervention

__all__ = ["REGISTRY", "Intervention", "Surface", "apply_all", "build_interventions", "kinds", "parse_intervention"]


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":
        return kinds()
    raise AttributeError(f"module 'mcp_hazard.interventions' has no attribute {name!r}")

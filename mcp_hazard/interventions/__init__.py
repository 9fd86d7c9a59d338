"""Interface interventions (rename, reorder, augment, replace, name policies, term substitution)."""

from __future__ import annotations

from mcp_hazard.interventions import augment, names, rename, reorder, replace, substitute  # noqa: F401
from mcp_hazard.interventions.base import REGISTRY, Intervention, Surface
from mcp_hazard.interventions.build import apply_all, build_interventions, parse_intervention

__all__ = ["REGISTRY", "Intervention", "Surface", "apply_all", "build_interventions", "parse_intervention"]

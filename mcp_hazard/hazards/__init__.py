"""Hazards: rules that make tools fail, drift, lie or conflict at failpoints, on a deterministic schedule.

`REGISTRY` holds every kind (one module each), found through the `mcp_hazard.hazards` entry point group on first
use (registry.py).
"""

from mcp_hazard.hazards.base import REGISTRY, CallContext, Effect, Hazard, Rejection, ToolView
from mcp_hazard.hazards.engine import HazardEngine
from mcp_hazard.hazards.instances import build_hazards, describe_kinds, expand, parse_hazard_option

__all__ = [
    "REGISTRY",
    "CallContext",
    "Effect",
    "Hazard",
    "HazardEngine",
    "Rejection",
    "ToolView",
    "build_hazards",
    "describe_kinds",
    "expand",
    "parse_hazard_option",
]

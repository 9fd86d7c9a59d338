"""Hazards: rules that make tools fail, drift, lie or conflict at failpoints, on a deterministic schedule.

Importing this package registers every kind (one module each) in `REGISTRY`.
"""

from mcp_hazard.hazards import conflict, drift, execution, invocation, lost_response, output, pagination, silent  # noqa: F401
from mcp_hazard.hazards.base import REGISTRY, CallContext, Effect, Hazard, Rejection, ToolView
from mcp_hazard.hazards.build import build_hazards, describe_kinds, expand, parse_hazard_option
from mcp_hazard.hazards.engine import HazardEngine

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

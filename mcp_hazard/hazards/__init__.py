"""Hazards: rules that make tools fail, drift, lie or conflict at failpoints, on a deterministic schedule.

`REGISTRY` holds every kind (one module each), found through the `mcp_hazard.hazards` entry point group on first
use (registry.py). A kind is a `Hazard` (before/after a call) with the capabilities it opts into (capabilities.py),
asking a `ToolFacts` provider what it needs to know of the tools (tool_facts.py).
"""

from mcp_hazard.hazards.base import REGISTRY, CallContext, Effect, Hazard, Rejection, ToolView
from mcp_hazard.hazards.capabilities import (
    ChangesInterface,
    JudgesRecovery,
    Lists,
    Placement,
    Presentation,
    applicable_tools,
)
from mcp_hazard.hazards.engine import HazardEngine
from mcp_hazard.hazards.instances import build_hazards, describe_kinds, expand, parse_hazard_option
from mcp_hazard.hazards.tool_facts import ScenarioFacts, ToolFacts, facts_of

__all__ = [
    "REGISTRY",
    "CallContext",
    "ChangesInterface",
    "Effect",
    "Hazard",
    "HazardEngine",
    "JudgesRecovery",
    "Lists",
    "Placement",
    "Presentation",
    "Rejection",
    "ScenarioFacts",
    "ToolFacts",
    "ToolView",
    "applicable_tools",
    "build_hazards",
    "describe_kinds",
    "expand",
    "facts_of",
    "parse_hazard_option",
]

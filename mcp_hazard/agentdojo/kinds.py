"""The hazard kinds on an AgentDojo suite's tools: proxy mode's kinds, which know a tool by its notes (here the
facts table's) rather than by a behaviour that can be run offline."""

from __future__ import annotations

from mcp_hazard.hazards.base import Hazard
from mcp_hazard.proxy.kinds import PROXY_KINDS

AGENTDOJO_KINDS: dict[str, type[Hazard]] = dict(PROXY_KINDS)

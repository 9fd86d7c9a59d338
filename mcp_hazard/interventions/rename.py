"""rename: tool names replaced by neutral alternatives chosen from the seed; arguments and behaviour unchanged."""

from __future__ import annotations

from mcp_hazard.interventions.naming import neutral_tool
from mcp_hazard.interventions.surface import Intervention, Surface, register


@register
class Rename(Intervention):
    kind = "rename"
    summary = "Tool names replaced by neutral names (tool_birch, ...); descriptions and arguments unchanged."

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        taken = set(self.originals) | {s.name for s in surfaces}
        return [s.derive(name=neutral_tool(taken, *self.keys(s.inner))) for s in surfaces]

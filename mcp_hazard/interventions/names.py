"""Name policies for tool and argument names: random tokens, or realistic words unrelated to the tool. They separate
an agent's reading of descriptions from memorised names; descriptions are kept."""

from __future__ import annotations

import re

from mcp_hazard.interventions.base import (
    Intervention,
    Surface,
    properties,
    register,
    rename_args,
    rename_in_text,
    renamed_schema,
)
from mcp_hazard.interventions.naming import REALISTIC, random_name, realistic_name


class _NamePolicy(Intervention):
    maker = staticmethod(random_name)

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        taken = set(self.originals) | {s.name for s in surfaces}
        out = []
        for surface in surfaces:
            own = set(re.split(r"[^a-z0-9]+", surface.inner.lower()))  # realistic, but unrelated to this tool
            local_taken = taken | {w for w in REALISTIC if w in own}
            tool = self.maker(local_taken, *self.keys(surface.inner))
            while own & set(tool.split("_")):
                tool = self.maker(local_taken, *self.keys(surface.inner, tool))
            taken.add(tool)
            local = set(self.originals)
            names = {p: self.maker(local, *self.keys(surface.inner, p)) for p in properties(surface.input_schema)}
            inward, outward = rename_args(names)
            to_inner, to_outer = surface.then(inward, outward)
            description = rename_in_text(surface.description, names)
            out.append(surface.derive(name=tool, input_schema=renamed_schema(surface.input_schema, names),
                                      to_inner=to_inner, to_outer=to_outer, description=description))  # fmt: skip
        return out


@register
class RandomNames(_NamePolicy):
    kind = "names=random"
    summary = "Tool and argument names replaced by random tokens (t_vokeram); descriptions kept."
    maker = staticmethod(random_name)


@register
class RealisticNames(_NamePolicy):
    kind = "names=realistic"
    summary = "Tool and argument names replaced by realistic but unrelated words (harbor_ledger)."
    maker = staticmethod(realistic_name)

"""reorder: the order of arguments changes (in `properties`, in `required`, and in the description)."""

from __future__ import annotations

import copy
import random

from mcp_hazard.interventions.surface import Intervention, Surface, flat_properties, register
from mcp_hazard.stable import draw


@register
class Reorder(Intervention):
    kind = "reorder"
    summary = "Argument order permuted in properties, required and the description; names and behaviour unchanged."

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        out = []
        for surface in surfaces:
            props, nested = flat_properties(surface.input_schema)
            names = list(props)
            if len(names) < 2:
                out.append(surface)
                continue
            order = names[:]
            random.Random(int(draw(*self.keys(surface.inner)) * 2**53)).shuffle(order)
            if order == names:
                order = names[1:] + names[:1]
            outer = copy.deepcopy(surface.input_schema)
            schema = outer["properties"][nested] if nested else outer
            schema["properties"] = {name: props[name] for name in order}
            if isinstance(schema.get("required"), list):
                required = set(schema["required"])
                schema["required"] = [name for name in order if name in required]
            schema = outer
            description = f"{surface.description.rstrip()} Arguments, in order: {', '.join(order)}."
            out.append(surface.derive(input_schema=schema, description=description))
        return out

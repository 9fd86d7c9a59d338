"""augment: a new required argument with a documented value; a call without it, or with another value, is rejected
by the served schema (an ordinary schema error)."""

from __future__ import annotations

import copy
from typing import Any

from mcp_hazard.interventions.surface import Intervention, Surface, properties, register
from mcp_hazard.stable import choose

NAMES = ("request_mode", "api_profile", "channel", "client_tier", "consistency")
VALUES = ("standard", "default", "basic", "v2", "strong")


@register
class Augment(Intervention):
    kind = "augment"
    summary = "A new required argument with a documented constant value; calls without it are schema errors."

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        out = []
        for surface in surfaces:
            props = properties(surface.input_schema)
            candidates = (choose(NAMES, *self.keys(surface.inner)), *NAMES, *(f"{n}_flag" for n in NAMES))
            name = next(n for n in candidates if n not in props and n not in self.originals)
            value = choose(VALUES, *self.keys(surface.inner, "value"))
            schema = copy.deepcopy(surface.input_schema)
            schema["properties"] = {
                **props,
                name: {"type": "string", "const": value, "description": f'Required. Always "{value}".'},
            }
            schema["required"] = [*schema.get("required", []), name]

            def inward(args: dict[str, Any], name: str = name) -> dict[str, Any]:
                return {k: v for k, v in args.items() if k != name}

            def outward(args: dict[str, Any], name: str = name, value: str = value) -> dict[str, Any]:
                return {**args, name: value}

            to_inner, to_outer = surface.then(inward, outward)
            description = f'{surface.description.rstrip()} Always pass {name}="{value}".'
            out.append(surface.derive(input_schema=schema, description=description, to_inner=to_inner,
                                      to_outer=to_outer))  # fmt: skip
        return out

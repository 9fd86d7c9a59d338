"""replace: the tool is replaced by an equivalent with another interface: another name, arguments nested in one
`request` object under other names. The mapping back is derived (synonyms), so the behaviour is the original's."""

from __future__ import annotations

import copy
from typing import Any

from mcp_hazard.interventions.base import Intervention, Surface, properties, register, rename_args

VERBS = {"get": "fetch", "search": "find", "list": "enumerate", "find": "locate", "check": "verify",
         "convert": "translate", "book": "reserve", "create": "make", "send": "dispatch", "track": "trace",
         "read": "open", "quote": "price", "schedule": "plan", "pay": "settle", "estimate": "assess"}  # fmt: skip
WORDS = {"id": "identifier", "date": "day", "city": "town", "code": "key", "name": "label", "amount": "value",
         "from": "source", "to": "target", "query": "terms", "month": "period", "origin": "start",
         "destination": "end", "night": "stay_date", "number": "num", "currency": "money"}  # fmt: skip


def synonym(name: str) -> str:
    parts = name.split("_")
    swapped = [WORDS.get(p, p) for p in parts]
    return "_".join(swapped) if swapped != parts else f"{name}_value"


@register
class Replace(Intervention):
    kind = "replace"
    summary = "Each tool replaced by an equivalent: another name, arguments nested in a `request` object, renamed."

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        taken = set(self.originals) | {s.name for s in surfaces}
        out = []
        for surface in surfaces:
            verb, _, rest = surface.name.partition("_")
            name = f"{VERBS.get(verb, verb)}_{rest}" if rest and verb in VERBS else f"{surface.name}_service"
            while name in taken:
                name += "_x"
            taken.add(name)
            props = properties(surface.input_schema)
            names = {p: synonym(p) for p in props}
            inner_schema = copy.deepcopy(surface.input_schema)
            inner_schema["properties"] = {names[k]: v for k, v in props.items()}
            if isinstance(surface.input_schema.get("required"), list):
                inner_schema["required"] = [names.get(r, r) for r in surface.input_schema["required"]]
            inner_schema.pop("$schema", None)
            schema = {
                "type": "object",
                "properties": {"request": {**inner_schema, "description": "All arguments of the request."}},
                "required": ["request"],
                "additionalProperties": False,
            }
            back, forth = rename_args(names)

            def inward(args: dict[str, Any], back: Any = back) -> dict[str, Any]:
                request = args.get("request")
                return back(request) if isinstance(request, dict) else {}

            def outward(args: dict[str, Any], forth: Any = forth) -> dict[str, Any]:
                return {"request": forth(args)}

            to_inner, to_outer = surface.then(inward, outward)
            out.append(surface.derive(name=name, input_schema=schema, to_inner=to_inner, to_outer=to_outer))
        return out

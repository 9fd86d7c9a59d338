"""replace: the tool is replaced by an equivalent with another interface.

A tool with a `replacement:` in the scenario is served as declared when its interface below is the authored one and no
hazard may change it (an invocation error or a spec drift on the tool, pagination's page argument, or an earlier
intervention that renamed or added arguments would leave the declaration without a place for what changed). Any
other tool gets a derived equivalent: another name, arguments nested in one `request` object under synonyms. Either
way the mapping back makes the behaviour the original's."""

from __future__ import annotations

import copy
from typing import Any

from mcp_hazard.interventions.surface import Intervention, Surface, properties, register, rename_args, rename_in_text
from mcp_hazard.scenario.models import Scenario, ToolSpec
from mcp_hazard.scenario.replacement import to_original, to_replacement

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

    declared: dict[str, ToolSpec]

    def bind(self, scenario: Scenario) -> None:
        self.declared = {tool.name: tool for tool in scenario.tools if tool.replacement is not None}

    def _as_declared(self, surface: Surface, taken: set[str]) -> Surface | None:
        tool = getattr(self, "declared", {}).get(surface.inner)
        if tool is None or tool.replacement is None:
            return None
        if surface.notes.get("interface_hazard") or set(properties(surface.input_schema)) != set(
            properties(tool.input_schema)
        ):
            return None  # the interface below is not (or may stop being) the authored one the declaration fits
        replacement = tool.replacement
        schema = copy.deepcopy(replacement.input_schema)
        name = replacement.name
        while name in taken:
            name += "_x"
        taken.add(name)
        to_inner, to_outer = surface.then(
            lambda args: to_original(replacement, args), lambda args: to_replacement(replacement, args)
        )
        description = replacement.description or rename_in_text(surface.description, replacement.arguments)
        return surface.derive(name=name, input_schema=schema, to_inner=to_inner, to_outer=to_outer,
                              description=description)  # fmt: skip

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        served = {s.name for s in surfaces}
        taken = set(self.originals) | served
        out: list[Surface] = []
        for surface in surfaces:
            declared = self._as_declared(surface, served - {surface.name} | {s.name for s in out})
            if declared is not None:
                out.append(declared)
                taken.add(declared.name)
                continue
            verb, _, rest = surface.name.partition("_")
            name = f"{VERBS.get(verb, verb)}_{rest}" if rest and verb in VERBS else f"{surface.name}_service"
            while name in taken:
                name += "_x"
            taken.add(name)
            props = properties(surface.input_schema)
            names: dict[str, str] = {}
            used = set(self.originals)
            for p in props:  # synonyms never meet each other nor any original name
                new = synonym(p)
                while new in used or new in names.values():
                    new += "_x"
                names[p] = new
            inner_schema = copy.deepcopy(surface.input_schema)
            inner_schema["properties"] = {names[k]: v for k, v in props.items()}
            if isinstance(surface.input_schema.get("required"), list):
                inner_schema["required"] = [names.get(r, r) for r in surface.input_schema["required"]]
            inner_schema.pop("$schema", None)
            wrapper = next(w for w in ("request", "payload", "call_input", "request_body_x") if w not in self.originals)
            schema = {
                "type": "object",
                "properties": {wrapper: {**inner_schema, "description": "All arguments of the request."}},
                "required": [wrapper],
                "additionalProperties": False,
            }
            back, forth = rename_args(names)

            def inward(args: dict[str, Any], back: Any = back, wrapper: str = wrapper) -> dict[str, Any]:
                request = args.get(wrapper)
                return back(request) if isinstance(request, dict) else {}

            def outward(args: dict[str, Any], forth: Any = forth, wrapper: str = wrapper) -> dict[str, Any]:
                return {wrapper: forth(args)}

            to_inner, to_outer = surface.then(inward, outward)
            description = rename_in_text(surface.description, names)
            out.append(surface.derive(name=name, input_schema=schema, to_inner=to_inner, to_outer=to_outer,
                                      description=description))  # fmt: skip
        return out

"""substitute: a documented concept renamed to a random token in every description, explained once."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from mcp_hazard.interventions.base import Intervention, Surface, properties, register
from mcp_hazard.interventions.naming import token

STOP = {"the", "and", "with", "from", "that", "this", "into", "for", "one", "such", "each", "when", "then", "than",
        "code", "name", "text", "date", "list", "also", "only", "given", "their", "there", "which", "will"}  # fmt: skip


def _descriptions(surface: Surface) -> list[str]:
    texts = [surface.description]
    texts += [p.get("description", "") for p in properties(surface.input_schema).values() if isinstance(p, dict)]
    return texts


@register
class Substitute(Intervention):
    kind = "substitute"
    summary = "The most documented concept renamed to a random token in all descriptions, explained once."

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        words: Counter[str] = Counter()
        for surface in surfaces:
            for text in _descriptions(surface):
                words.update(w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in STOP)
        if not words:
            return surfaces
        concept = sorted(words.items(), key=lambda item: (-item[1], item[0]))[0][0]
        new = token(*self.keys(concept))
        pattern = re.compile(rf"\b{re.escape(concept)}(s?)\b", re.IGNORECASE)

        def swap(text: str) -> str:
            return pattern.sub(lambda m: new + m.group(1), text)

        out = []
        for index, surface in enumerate(surfaces):
            schema: dict[str, Any] = dict(surface.input_schema)
            props = {k: ({**v, "description": swap(v["description"])} if isinstance(v, dict) and "description" in v
                         else v) for k, v in properties(surface.input_schema).items()}  # fmt: skip
            schema["properties"] = props
            description = swap(surface.description)
            if index == 0:
                description += f" (In these tools, a '{new}' is a {concept}.)"
            out.append(surface.derive(description=description, input_schema=schema, notes={"term": [concept, new]}))
        return out

"""substitute: a documented concept renamed to a random token in every description, explained once."""

from __future__ import annotations

import copy
import re
from collections import Counter
from typing import Any

from mcp_hazard.interventions.base import _WRITTEN, Intervention, Surface, flat_properties, register
from mcp_hazard.interventions.naming import token

STOP = {"the", "and", "with", "from", "that", "this", "into", "for", "one", "such", "each", "when", "then", "than",
        "code", "name", "text", "date", "list", "also", "only", "given", "their", "there", "which", "will",
        "always", "pass", "arguments", "argument", "order", "request", "required", "value", "tools"}  # fmt: skip


def _prose(text: str) -> str:
    """A description without the sentences interventions wrote (argument order, constants)."""
    return _WRITTEN.sub(" ", text)


def _descriptions(surface: Surface) -> list[str]:
    props, _nested = flat_properties(surface.input_schema)
    texts = [_prose(surface.description)]
    texts += [p.get("description", "") for p in props.values() if isinstance(p, dict)]
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
            """Only the prose: argument names that interventions wrote into a description stay as served."""
            pieces, last = [], 0
            for match in _WRITTEN.finditer(text):
                pieces.append(pattern.sub(lambda m: new + m.group(1), text[last : match.start()]))
                pieces.append(match.group(0))
                last = match.end()
            pieces.append(pattern.sub(lambda m: new + m.group(1), text[last:]))
            return "".join(pieces)

        out = []
        for index, surface in enumerate(surfaces):
            schema: dict[str, Any] = copy.deepcopy(surface.input_schema)
            _props, nested = flat_properties(schema)
            holder = schema["properties"][nested] if nested else schema
            for prop in (holder.get("properties") or {}).values():
                if isinstance(prop, dict) and isinstance(prop.get("description"), str):
                    prop["description"] = swap(prop["description"])
            description = swap(surface.description)
            if index == 0:
                description += f" (In these tools, a '{new}' is a {concept}.)"
            out.append(surface.derive(description=description, input_schema=schema, notes={"term": [concept, new]}))
        return out

"""substitute: a documented concept renamed to a random token in every description, explained once."""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from mcp_hazard.interventions.naming import token
from mcp_hazard.interventions.surface import _WRITTEN, Intervention, Surface, register

STOP = {"the", "and", "with", "from", "that", "this", "into", "for", "one", "such", "each", "when", "then", "than",
        "code", "name", "text", "date", "list", "also", "only", "given", "their", "there", "which", "will",
        "always", "pass", "arguments", "argument", "order", "request", "required", "value", "tools"}  # fmt: skip


def _prose(text: str) -> str:
    """A description without the sentences interventions wrote (argument order, constants)."""
    return _WRITTEN.sub(" ", text)


def _described(schema: Any) -> Iterator[dict[str, Any]]:
    """Every argument schema below `schema` with a description, at any depth of nested objects and arrays."""
    if not isinstance(schema, dict):
        return
    children = schema.get("properties")
    for child in children.values() if isinstance(children, dict) else ():
        if isinstance(child, dict) and isinstance(child.get("description"), str):
            yield child
        yield from _described(child)
    yield from _described(schema.get("items"))


def _descriptions(surface: Surface) -> list[str]:
    return [_prose(surface.description), *(node["description"] for node in _described(surface.input_schema))]


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
            for node in list(_described(schema)):
                node["description"] = swap(node["description"])
            description = swap(surface.description)
            if index == 0:
                description += f" (In these tools, a '{new}' is a {concept}.)"
            out.append(
                surface.derive(description=description, input_schema=schema,
                               notes={**surface.notes, "term": [concept, new]})
            )  # fmt: skip
        return out

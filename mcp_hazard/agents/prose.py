"""What tools say about themselves in words: the words of names and prose (singular, compounds joined), every
description a tool's schemas carry, and how much a word tells tools apart over one listing (inverse document
frequency)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import mcp_types as types

from mcp_hazard.agents.normalise import words


def stem(word: str) -> str:
    """A crude singular: `messages` -> `message`, `stores` -> `store`, `categories` -> `category`."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def prose_words(text: str) -> set[str]:
    """Words of names and prose, singular, with hyphenated compounds also joined (`e-mail` gives `email` too), so a
    description and an identifier that say the same thing share words."""
    out = {stem(w) for w in words(text)}
    for compound in re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)+", text):
        out.add(stem(compound.replace("-", "").lower()))
    return out


def _schema_descriptions(schema: Any) -> list[str]:
    """Every description in an input schema, nested properties and array items included."""
    if not isinstance(schema, dict):
        return []
    out = [schema["description"]] if isinstance(schema.get("description"), str) else []
    for sub in (schema.get("properties") or {}).values():
        out.extend(_schema_descriptions(sub))
    out.extend(_schema_descriptions(schema.get("items")))
    return out


def output_fields(tool: types.Tool) -> list[str]:
    """Top-level fields the tool's output schema documents (empty when it documents none)."""
    props = (tool.output_schema or {}).get("properties")
    return list(props) if isinstance(props, dict) else []


def tool_document(tool: types.Tool) -> set[str]:
    """What a tool says about itself in prose: its description, its argument descriptions and the names of the
    fields it documents returning. Its served name is left out: it may have been replaced by a token or a word
    chosen to be unrelated."""
    texts = [tool.description or "", *_schema_descriptions(tool.input_schema), *output_fields(tool)]
    out: set[str] = set()
    for text in texts:
        out |= prose_words(text)
    return out


def idf_weights(documents: Sequence[set[str]]) -> dict[str, float]:
    """Inverse document frequency of every word over the listing: a word only one tool uses tells tools apart,
    a word every tool uses (`get`, `id`) barely does."""
    total = len(documents)
    counts: dict[str, int] = {}
    for document in documents:
        for word in document:
            counts[word] = counts.get(word, 0) + 1
    return {word: math.log(1 + total / count) for word, count in counts.items()}


def word_overlap(query: set[str], document: set[str], idf: dict[str, float]) -> float:
    """The IDF-weighted share of the query's words the document holds, over the query words the listing knows at
    all (a word no tool uses says nothing about any of them). In [0, 1]."""
    known = [w for w in sorted(query) if w in idf]
    if not known:
        return 0.0
    return sum(idf[w] for w in known if w in document) / sum(idf[w] for w in known)

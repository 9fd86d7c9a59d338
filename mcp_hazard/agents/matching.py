"""Which listed tool a plan step means, and where each planned argument goes, from what MCP shows alone.

The plan names tools and arguments as the scenario authored them. When an interface changed (a renamed tool, argument
names replaced by tokens or by unrelated words, arguments nested in one request object), the names say little or
even mislead, so a careful agent reads the rest of the listing:

- the description and the argument descriptions, word by word, with rare words counting for more than words every
  tool shares ("get", "id"): inverse document frequency over the listing;
- the call itself: a planned value that satisfies a documented pattern, enum, type, date format or example
  ("such as MSG-10000") fits; one that breaks it does not, and required arguments the plan cannot fill count
  against the tool;
- the result: a tool whose output schema documents the fields later steps read fits, one that documents others
  does not;
- side effects: a step that reads must not land on a tool that sends, books or pays (annotations first, else the
  verb the description starts with), so a wrong guess never costs more than a wasted read.

Nothing here knows a scenario or an intervention's internals; it scores what `tools/list` served. Every score is a
plain function of its inputs (no randomness, no `hash()`), and ties go to listing order. The words are read in
prose.py, the call in argument_fit.py (with leaves.py for nested arguments); this module weighs them with the result
and side effects into one ranking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_hazard.agents.argument_fit import argument_fit
from mcp_hazard.agents.normalise import similarity
from mcp_hazard.agents.prose import idf_weights, output_fields, prose_words, tool_document, word_overlap

# First words of tool names and descriptions that announce a side effect (the verb of a write).
WRITE_VERBS = frozenset(
    {
        "add", "approve", "archive", "assign", "book", "cancel", "charge", "create", "delete", "deposit", "edit",
        "insert", "invite", "issue", "modify", "move", "pay", "place", "post", "publish", "purchase", "refund",
        "register", "reject", "remove", "rename", "reserve", "schedule", "send", "set", "submit", "transfer",
        "update", "upload", "withdraw", "write",
    }
)  # fmt: skip

# Weights of the parts of a tool's score (see `Candidate`): evidence from the call and the result outweighs words.
NAME_WEIGHT = 0.5  # a served name may be a synonym (replace) or unrelated on purpose (names=realistic)
DESCRIPTION_WEIGHT = 2.0
FIELD_WORDS_WEIGHT = 0.5
ARGUMENT_WEIGHT = 1.0
SIDE_EFFECT_PENALTY = 4.0


# -- side effects and results --------------------------------------------------------------------------------------


def planned_write(name: str) -> bool:
    """Whether a planned tool name announces a side effect (`send_email`, `create_event`)."""
    first = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower())[0]
    return first in WRITE_VERBS


def tool_writes(tool: types.Tool) -> bool:
    """Whether a served tool has side effects: its annotations say so (not read-only, or destructive), or its
    description starts with a writing verb ("Send an e-mail ...", "Book one seat ...")."""
    notes = tool.annotations
    if notes is not None:
        if notes.destructive_hint:
            return True
        if notes.read_only_hint is not None:
            return not notes.read_only_hint
    first = re.findall(r"[A-Za-z]+", tool.description or "")[:1]
    return bool(first) and first[0].lower() in WRITE_VERBS


def output_fit(tool: types.Tool, fields: Sequence[str]) -> float:
    """Whether the tool documents returning the fields later steps read: +2 for all of them, -1.5 when it documents
    its result and none of them is there, 0 when it documents nothing."""
    documented = output_fields(tool)
    if not fields or not documented:
        return 0.0
    found = sum(1 for f in fields if f in documented or any(similarity(f, d) >= 0.5 for d in documented))
    return 2.0 * found / len(fields) if found else -1.5


# -- ranking --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One listed tool scored against one plan step; the parts are kept to explain a choice."""

    name: str
    score: float
    writes: bool
    name_words: float
    description: float
    field_words: float
    arguments: float
    result: float


def rank_tools(
    tools: Sequence[types.Tool], wanted: str, arguments: dict[str, Any], fields: Sequence[str] = ()
) -> list[Candidate]:
    """Every listed tool scored as the one the plan's `wanted(arguments)` means, best first (ties in listing
    order). `fields` are the result fields later steps read."""
    documents = [tool_document(tool) for tool in tools]
    idf = idf_weights(documents)
    query = prose_words(wanted)
    field_query: set[str] = set()
    for field in fields:
        field_query |= prose_words(field)
    writing = planned_write(wanted)
    ranked = []
    for position, (tool, document) in enumerate(zip(tools, documents, strict=True)):
        writes = tool_writes(tool)
        parts = (
            NAME_WEIGHT * similarity(tool.name, wanted),
            DESCRIPTION_WEIGHT * word_overlap(query, document, idf),
            FIELD_WORDS_WEIGHT * word_overlap(field_query, document, idf),
            ARGUMENT_WEIGHT * argument_fit(tool.input_schema or {}, arguments, tool.description or ""),
            output_fit(tool, fields),
        )
        penalty = 0.0
        if writes and not writing:  # a read must never land on a tool that sends, books or pays
            penalty = SIDE_EFFECT_PENALTY
        elif writing and not writes:
            penalty = SIDE_EFFECT_PENALTY / 2
        candidate = Candidate(tool.name, round(sum(parts) - penalty, 9), writes, *parts)
        ranked.append((-candidate.score, position, candidate))
    return [candidate for _score, _position, candidate in sorted(ranked, key=lambda item: (item[0], item[1]))]

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
plain function of its inputs (no randomness, no `hash()`), and ties go to listing order.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_hazard.agents.normalise import similarity, words
from mcp_hazard.scenario.patterns import pattern_problem, search

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

UNPLACED = -2.0  # a planned argument the tool has no property for
MISSING_REQUIRED = -1.5  # a required property the plan cannot fill (and that has no constant)
BROKEN = -2.0  # a value that breaks a documented pattern, enum, constant or type

_EXAMPLE = re.compile(r"[A-Za-z0-9]+(?:[-/:.][A-Za-z0-9]+)+|[A-Za-z]*\d[A-Za-z0-9]*")
_TEMPLATES = {
    "YYYY-MM-DD": r"\d{4}-\d{2}-\d{2}",
    "DD/MM/YYYY": r"\d{2}/\d{2}/\d{4}",
    "MM/DD/YYYY": r"\d{2}/\d{2}/\d{4}",
    "HH:MM": r"\d{1,2}:\d{2}",
    "YYYY-MM": r"\d{4}-\d{2}",
}


# -- words ---------------------------------------------------------------------------------------------------------


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


# -- arguments -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """One place a value goes in a call: a property that is not itself an object of properties, by its path."""

    path: tuple[str, ...]
    prop: dict[str, Any]
    required: bool


def leaves(schema: dict[str, Any], arguments: dict[str, Any] | None = None) -> list[Leaf]:
    """Every place a value goes, in documented order, descending into objects of properties: one `request` object
    (replace) or several nested ones (`lane.from`, `parcel.size_cm.length`). An object property is kept whole
    when the plan itself passes an object under that name. A place is required when it and every object above it
    are required."""
    planned_objects = {k for k, v in (arguments or {}).items() if isinstance(v, dict)}
    out: list[Leaf] = []

    def walk(node: dict[str, Any], prefix: tuple[str, ...], required: bool) -> None:
        props = node.get("properties")
        wanted = set(node.get("required") or [])
        for name, prop in props.items() if isinstance(props, dict) else ():
            prop = prop if isinstance(prop, dict) else {}
            path, needed = (*prefix, name), required and name in wanted
            inner = prop.get("properties")
            if prop.get("type") == "object" and isinstance(inner, dict) and inner and name not in planned_objects:
                walk(prop, path, needed)
            else:
                out.append(Leaf(path, prop, needed))

    walk(schema, (), True)
    return out


def flat_view(
    schema: dict[str, Any], arguments: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Leaf]]:
    """The input schema seen as one flat object of its leaves, for placing planned arguments, and each flat name's
    leaf. A leaf keeps its own name (the path when two leaves share it); the names of the objects above it are
    added to its description, so `size_cm` still tells `length` is in cm."""
    found = leaves(schema, arguments)
    counts: dict[str, int] = {}
    for leaf in found:
        counts[leaf.path[-1]] = counts.get(leaf.path[-1], 0) + 1
    props: dict[str, Any] = {}
    by_name: dict[str, Leaf] = {}
    for leaf in found:
        name = leaf.path[-1] if counts[leaf.path[-1]] == 1 else ".".join(leaf.path)
        prop = dict(leaf.prop)
        if len(leaf.path) > 1:
            prop["description"] = " ".join([str(prop.get("description", "")), *leaf.path[:-1]]).strip()
        props[name] = prop
        by_name[name] = leaf
    required = [name for name, leaf in by_name.items() if leaf.required]
    return {"type": "object", "properties": props, "required": required}, by_name


def put(arguments: dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set `value` at `path` in `arguments`, creating the objects on the way."""
    *parents, last = path
    node = arguments
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[last] = value


def nest(values: dict[str, Any], by_name: dict[str, Leaf]) -> dict[str, Any]:
    """Flat values back into the documented shape: each value at its leaf's path (unknown names stay on top)."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        leaf = by_name.get(name)
        put(out, leaf.path if leaf is not None else (name,), value)
    return out


def fit_value(prop: dict[str, Any], value: Any) -> Any:
    """A value in the form a schema property documents: text for a string, a number for a number, a date format."""
    kind = prop.get("type")
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind in ("number", "integer") and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if kind == "integer" or (number.is_integer() and "." not in value) else number
    documented = f"{prop.get('pattern', '')} {prop.get('description', '')}"
    if isinstance(value, str) and ("DD/MM/YYYY" in documented or r"\d{2}/\d{2}/\d{4}" in documented):
        return reformat_date(value, "%d/%m/%Y") or value
    return value


def reformat_date(value: Any, fmt: str) -> str | None:
    try:
        return dt.date.fromisoformat(str(value)[:10]).strftime(fmt)
    except ValueError:
        return None


def _shape(text: str) -> str:
    """`MSG-88213` -> `AAA-99999`: what an identifier looks like, whatever it says."""
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"[0-9]", "9", text)))


def _type_fit(kind: Any, value: Any) -> float:
    if not isinstance(kind, str):
        return 0.0
    if isinstance(value, bool):
        return 0.2 if kind == "boolean" else BROKEN
    if isinstance(value, int | float):
        return 0.2 if kind in ("number", "integer") else (0.0 if kind == "string" else BROKEN)
    if isinstance(value, str):
        if kind == "string":
            return 0.2
        if kind in ("number", "integer"):
            return 0.0 if re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", value) else BROKEN
        return BROKEN
    if isinstance(value, list):
        return 0.5 if kind == "array" else BROKEN
    if isinstance(value, dict):
        return 0.2 if kind == "object" else BROKEN
    return 0.0


def _pattern_fit(pattern: Any, value: Any) -> float:
    """Served patterns come from whatever server the agent talks to: matched with RE2 (linear time), and a pattern
    RE2 cannot compile says nothing either way."""
    if not isinstance(pattern, str) or not isinstance(value, str) or pattern_problem(pattern):
        return 0.0
    return 1.5 if search(pattern, value) else BROKEN


def _documented_example(description: str, value: Any) -> float:
    """A value shaped like an example the description gives (`MSG-88213` for "such as MSG-10000"), written in a
    documented template (`YYYY-MM-DD`), or named outright by the description (an office it lists)."""
    if not isinstance(value, str) or not value.strip() or not description:
        return 0.0
    score = 0.0
    for template, regex in _TEMPLATES.items():
        if template in description and re.fullmatch(regex, value):
            score = max(score, 0.6)
    shape = _shape(value)
    if any(_shape(example) == shape for example in _EXAMPLE.findall(description)) and re.search(r"\d", value):
        score = max(score, 1.0)
    if len(value) >= 3 and re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", description.lower()):
        score = max(score, 0.7)
    return score


def value_fit(prop: dict[str, Any], value: Any, tool_description: str = "") -> float:
    """How well one planned value fits one documented property, from the property alone: type, constant, enum,
    pattern (of the value or of each item), date format and documented examples. Negative when it breaks one."""
    value = fit_value(prop, value)
    score = _type_fit(prop.get("type"), value)
    if "const" in prop:
        score += 1.0 if value == prop["const"] else BROKEN
    if isinstance(prop.get("enum"), list):
        score += 1.5 if value in prop["enum"] else BROKEN
    score += _pattern_fit(prop.get("pattern"), value)
    items = prop.get("items")
    if isinstance(items, dict) and isinstance(value, list) and value:
        fits = [value_fit(items, item) for item in value]
        score += min(fits)
    if prop.get("format") == "date" and isinstance(value, str):
        score += 0.5 if reformat_date(value, "%Y-%m-%d") == value[:10] and len(value) == 10 else BROKEN
    description = str(prop.get("description", ""))
    score += max(_documented_example(description, value), 0.5 * _documented_example(tool_description, value))
    return score


def name_affinity(key: str, name: str, prop: dict[str, Any]) -> float:
    """How well our argument name fits a property by words: its served name, and its description (which keeps the
    meaning when the name is a token)."""
    told = prose_words(str(prop.get("description", "")))
    mine = prose_words(key)
    return similarity(key, name) + 0.8 * len(mine & told) / max(len(mine), 1)


def _pair_scores(props: dict[str, Any], arguments: dict[str, Any], tool_description: str) -> list[list[float]]:
    return [
        [
            name_affinity(key, name, prop if isinstance(prop, dict) else {})
            + value_fit(prop if isinstance(prop, dict) else {}, value, tool_description)
            for name, prop in props.items()
        ]
        for key, value in arguments.items()
    ]


def best_assignment(scores: list[list[float]]) -> tuple[float, list[int | None]]:
    """The assignment of arguments (rows) to distinct properties (columns) with the highest total, an argument
    left without a property costing `UNPLACED`. Exact search: plan steps have a handful of arguments. Ties keep
    the earliest choice in listing order."""
    columns = len(scores[0]) if scores else 0
    memo: dict[tuple[int, int], tuple[float, list[int | None]]] = {}

    def solve(row: int, used: int) -> tuple[float, list[int | None]]:
        if row == len(scores):
            return 0.0, []
        key = (row, used)
        if key in memo:
            return memo[key]
        rest, tail = solve(row + 1, used)
        best: tuple[float, list[int | None]] = (UNPLACED + rest, [None, *tail])
        for column in range(columns):
            if used & (1 << column):
                continue
            rest, tail = solve(row + 1, used | (1 << column))
            total = scores[row][column] + rest
            if total > best[0] + 1e-9:
                best = (total, [column, *tail])
        memo[key] = best
        return best

    return solve(0, 0)


def argument_fit(schema: dict[str, Any], arguments: dict[str, Any], tool_description: str = "") -> float:
    """How well the planned call fits a tool's input schema, per planned argument: the best placement of every
    argument, less what cannot be placed and what the tool requires that the plan cannot give."""
    flat, _leaves = flat_view(schema, arguments)
    props: dict[str, Any] = dict(flat.get("properties") or {})
    names = list(props)
    total, columns = best_assignment(_pair_scores(props, arguments, tool_description)) if arguments else (0.0, [])
    filled = {names[c] for c in columns if c is not None}
    for name in flat.get("required") or []:
        prop = props.get(name)
        if name not in filled and not (isinstance(prop, dict) and ("const" in prop or "default" in prop)):
            total += MISSING_REQUIRED
    return total / max(len(arguments), 1)


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


# -- ranking -------------------------------------------------------------------------------------------------------


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

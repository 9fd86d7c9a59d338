"""Judge a submitted final answer against a task's canonical answer: the whole answer under the task's rule first,
then the one value a sentence asserts ("The fare class is Standard."), with refusals recognised as giving up.

The rules, in order, and a table of examples are in docs/scoring.md ("Final answers"); a test reads that table and
checks it against `judge_answer`, and tests/data/answers.jsonl holds the labelled corpus the rules must agree with.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mcp_hazard.scenario.answer_extract import _DIGITS_JOINED, Candidate, extract, kind_of, prepare, value_key
from mcp_hazard.scenario.gave_up import hedged, refusal
from mcp_hazard.scenario.models import AnswerSpec, Scenario, Task


@dataclass(frozen=True)
class AnswerVerdict:
    """Whether an answer is correct, which rule decided (docs/scoring.md), the value judged, and whether it gave up."""

    correct: bool
    rule: str
    extracted: str | None = None
    gave_up: bool = False
    named: tuple[str, ...] = ()  # the distinct values an ambiguous answer names


def canonical_text(value: Any) -> str:
    """Trimmed, NFKC-normalised text with inner runs of white space folded: how every rule first sees an answer."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    else:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return " ".join(unicodedata.normalize("NFKC", text).split())


def parse_number(value: Any) -> float | None:
    """A number from an answer: a JSON number, or text holding exactly one number as the answer readers find it
    ('1,234.50', 'EUR 12.5', '12.5 km'): an identifier ('AU-426'), a date or a time holds none."""
    if isinstance(value, bool | list | dict) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    found = extract(canonical_text(value), frozenset({"number"}))
    return float(found[0].key) if len(found) == 1 else None


_MARKER = re.compile(
    r"^(?:(?:the\s+)?final\s+answer|answer|result|solution)\s*(?:is\s*)?[:=\-\u2013\u2014]\s*|^[-*\u2022>]\s+", re.I
)
_QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"), ("`", "`"), ("(", ")"), ("[", "]"))


def strip_markers(text: str) -> str:
    """`text` without what frames an answer: "Final answer:", a bullet, markdown bold or code marks, surrounding
    quotes, \\boxed{...}, and one trailing period."""
    text = text.replace("**", "").replace("`", "").strip()
    while True:
        before = text
        boxed = re.fullmatch(r"\\boxed\{(.*)\}", text)
        text = boxed.group(1) if boxed else _MARKER.sub("", text).strip()
        if len(text) > 1 and text.startswith("__") and text.endswith("__"):
            text = text[2:-2].strip()
        for left, right in _QUOTES:
            if len(text) > 1 and text.startswith(left) and text.endswith(right):
                text = text[1:-1].strip()
        if text.endswith(".") and not text.endswith(".."):
            text = text[:-1].rstrip()
        if text == before:
            return text


def _split_list(value: Any) -> list[str] | None:
    if isinstance(value, list):
        return [canonical_text(item).casefold() for item in value]
    if isinstance(value, str):
        parts = re.split(r"[,;\n]", value)
        return [canonical_text(part).casefold() for part in parts if part.strip()]
    return None


def _bare_number(text: str) -> float | None:
    """The number when `text` is one number with at most a currency or unit word around it ("EUR 1,234.50")."""
    text = prepare(text)
    found = extract(text, frozenset({"number"}))
    if len(found) != 1:
        return None
    rest = (text[: found[0].start] + " " + text[found[0].end :]).split()
    if len(rest) > 1 or any(ch.isdigit() for word in rest for ch in word):
        return None
    return float(found[0].key)


def _whole(spec: AnswerSpec, given: Any) -> bool:
    """The whole answer under the spec's own rule (docs/scenario-format.md, "Answer matching")."""
    if spec.match == "exact":
        return canonical_text(given) == canonical_text(spec.value)
    if spec.match == "case_insensitive":
        return canonical_text(given).casefold() == canonical_text(spec.value).casefold()
    if spec.match == "numeric":
        number = _bare_number(given) if isinstance(given, str) else parse_number(given)
        return number is not None and abs(number - float(spec.value)) <= spec.tolerance + 1e-9
    if spec.match == "one_of":
        text = canonical_text(given).casefold()
        return any(text == canonical_text(option).casefold() for option in spec.value)
    expected = sorted(canonical_text(item).casefold() for item in spec.value)
    items = _split_list(given)
    return items is not None and sorted(items) == expected


def _expected(spec: AnswerSpec) -> list[Any]:
    return list(spec.value) if spec.match in ("one_of", "unordered_list") else [spec.value]


_NAMES = frozenset({"text", "identifier"})


def answer_kinds(spec: AnswerSpec) -> frozenset[str]:
    """The kinds of value an answer to `spec` is read as: those of its expected values (a `numeric` answer only as a
    number)."""
    if spec.match == "numeric":
        return frozenset({"number"})
    return frozenset(k for k in map(kind_of, _expected(spec)) if k is not None)


def reads_vocabulary(spec: AnswerSpec) -> bool:
    """Whether `judge_answer` can look at its `vocabulary` for `spec`: only names and identifiers are looked for among
    it (numbers, dates and times are found by their shape), so a caller gathers one only then. Once per spec."""
    kept = _READS.get(id(spec))
    if kept is not None and kept[0] is spec:
        return kept[1]
    reads = bool(answer_kinds(spec) & _NAMES)
    if len(_READS) >= 4096:  # bounded: one entry per spec asked
        _READS.clear()
    _READS[id(spec)] = (spec, reads)  # the entry keeps its spec alive, so the id cannot be reused
    return reads


_READS: dict[int, tuple[AnswerSpec, bool]] = {}


def _item_key(candidate: Candidate) -> Any:
    """How a candidate is compared with an expected value of the same kind under every rule but `numeric`."""
    if candidate.kind in ("date", "time", "boolean"):
        return candidate.key
    return candidate.text


def _fits(candidate: Candidate, spec: AnswerSpec, value: Any) -> bool:
    """One candidate against one expected value. Dates and times compare by value under every rule (so does a
    yearless date with the month and day of the expected one); `numeric` compares numbers; the rest compare text."""
    if kind_of(value) != candidate.kind and not (spec.match == "numeric" and candidate.kind == "number"):
        return False
    if spec.match == "numeric":
        return abs(float(candidate.key) - float(value)) <= spec.tolerance + 1e-9
    if candidate.kind in ("date", "time", "boolean"):
        expected = value_key(candidate.kind, value)
        yearless = candidate.kind == "date" and str(candidate.key).startswith("--")
        return candidate.key == expected or (yearless and str(expected)[4:] == str(candidate.key)[1:])
    expected_text = canonical_text(value)
    if spec.match == "exact":
        return candidate.text == expected_text
    return candidate.text.casefold() == expected_text.casefold()


def _rule_for(spec: AnswerSpec, candidate: Candidate, core: str) -> str:
    if candidate.kind in ("date", "time"):
        return f"{candidate.kind}-by-value"  # "June 17, 2026" is 2026-06-17, alone or in a sentence
    if candidate.start == 0 and candidate.end == len(core):
        return spec.match
    if spec.match == "numeric":
        return "numeric" if _bare_number(core) is not None else "numeric-in-sentence"
    return "extracted-from-sentence"


_LIST_BREAK = re.compile(r"[,;\n]|\s(?:and|or|&)\s", re.IGNORECASE)
_LEAD = re.compile(r"^.*(?::|\b(?:are|is|were|was|include|includes|including)\b)\s*", re.IGNORECASE)
_NOT_ITEM_WORDS = (
    "as at in on for with from by of to both all each which that this these those the a an based "
    "according since because respectively etc total per it they there here i we so but then today now "
    "only"
)
_NOT_ITEMS = frozenset(_NOT_ITEM_WORDS.split())


def _unknown_item(core: str, found: list[Candidate]) -> bool:
    """True when a list-shaped answer has a short part that holds no recognised value ("Velmora, Castrane, Pressa"
    when Pressa is neither expected nor in the vocabulary): an extra item, so the list is not the expected one."""
    bounds = [0] + [p for m in _LIST_BREAK.finditer(core) for p in (m.start(), m.end())] + [len(core)]
    spans = list(zip(bounds[::2], bounds[1::2], strict=True))
    if len(spans) < 2:
        return False
    for index, (start, end) in enumerate(spans):
        if any(c.start < end and c.end > start for c in found):
            continue
        part = core[start:end]
        if index == 0:
            part = _LEAD.sub("", part)
        words = part.strip(" .:-*\u2022()").split()
        if 1 <= len(words) <= 3 and words[0].casefold() not in _NOT_ITEMS:
            return True
    return False


def judge_answer(
    spec: AnswerSpec, given: Any, *, prompt: str = "", vocabulary: frozenset[str] = frozenset()
) -> AnswerVerdict:
    """Judge `given` under `spec` (the rules in order: docs/scoring.md, "Final answers"). `prompt` is the task as
    served: values it names are the question, not the answer. `vocabulary` holds values the scenario's tools could
    return in the answer's place (`answer_vocabulary`): naming one of them is naming a candidate."""
    if given is None:
        return AnswerVerdict(False, "no_answer")
    if not isinstance(given, str):
        return AnswerVerdict(_whole(spec, given), spec.match, canonical_text(given))
    text = canonical_text(given)
    core = prepare(strip_markers(text))
    if _whole(spec, text) or (core != text and _whole(spec, core)):
        return AnswerVerdict(True, spec.match, core)
    refused = refusal(core)
    if not core:
        return AnswerVerdict(False, "gave_up", None, True)
    expected = _expected(spec)
    kinds = answer_kinds(spec)
    if not kinds:
        return AnswerVerdict(False, "gave_up" if refused else spec.match, None, bool(refused))
    terms = [str(v) for v in expected if kind_of(v) in ("text", "identifier")]
    terms += [v for v in vocabulary if kind_of(v) in kinds & _NAMES]
    digit_ids = any(isinstance(v, str) and _DIGITS_JOINED.fullmatch(v.strip()) for v in expected)
    found = extract(core, kinds, terms, digit_ids=digit_ids)
    echoed = {(c.kind, c.key) for c in extract(canonical_text(prompt), kinds, terms, digit_ids=digit_ids)}
    asserted = [c for c in found if not c.negated]
    fresh = [c for c in asserted if (c.kind, c.key) not in echoed]
    pool = fresh if refused else (fresh or asserted)  # a value the prompt names counts only when nothing else does
    distinct = list({(c.kind, c.key): c for c in reversed(pool)}.values())[::-1]
    if refused and (not distinct or hedged(core) or (spec.match != "unordered_list" and len(distinct) > 1)):
        return AnswerVerdict(False, "gave_up", None, True)
    if spec.match == "unordered_list":
        return _judge_list(spec, core, found, pool, distinct)
    if not distinct:
        return AnswerVerdict(False, "no_candidate")
    if len(distinct) > 1:
        if spec.match == "one_of" and all(any(_fits(c, spec, v) for v in expected) for c in distinct):
            return AnswerVerdict(True, "one_of-in-sentence", ", ".join(c.text for c in distinct))  # "Velmora (VLM)"
        return AnswerVerdict(False, "ambiguous", named=tuple(c.text for c in distinct))
    chosen = distinct[0]
    correct = any(_fits(chosen, spec, value) for value in expected)
    return AnswerVerdict(correct, _rule_for(spec, chosen, core), chosen.text)


def _judge_list(
    spec: AnswerSpec, core: str, found: list[Candidate], pool: list[Candidate], distinct: list[Candidate]
) -> AnswerVerdict:
    """A list named in a sentence ("Velmora and Castrane have space"): its values, in any order, are the expected
    items, with no short part left over that names something else."""
    if not distinct:
        return AnswerVerdict(False, "no_candidate")
    expected = [value_key(k, v) if (k := kind_of(v)) in ("date", "time") else canonical_text(v).casefold()
                for v in spec.value]  # fmt: skip
    given = [str(_item_key(c)).casefold() if c.kind not in ("date", "time") else c.key for c in pool]
    if len(set(map(str, expected))) == len(expected):
        same = set(map(str, given)) == set(map(str, expected))
    else:
        same = Counter(map(str, given)) == Counter(map(str, expected))
    shown = ", ".join(c.text for c in distinct)
    return AnswerVerdict(same and not _unknown_item(core, found), "list-in-sentence", shown)


_FIELD = re.compile(r"\.([A-Za-z_]\w*)|'([A-Za-z_]\w*)'")
_VOCABULARY_LIMIT = 60  # longer strings are descriptions, not values an answer names


def answer_fields(task: Task) -> frozenset[str]:
    """Result fields the golden answer is read from (`{{ fare.fare_class }}` -> fare_class): their values elsewhere
    are the values a wrong answer would name in the right one's place."""
    template = task.golden_path.answer
    return _template_fields(template) if isinstance(template, str) else frozenset()


@lru_cache(maxsize=4096)
def _template_fields(template: str) -> frozenset[str]:
    """Once per template: the scorer asks it of every judged episode."""
    return frozenset(a or b for a, b in _FIELD.findall(template))


def field_values(value: Any, fields: frozenset[str], into: set[str]) -> None:
    """Add to `into` every short text held under one of `fields` anywhere in `value` (a result, a behaviour)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in fields and isinstance(item, str) and "{{" not in item and 0 < len(item) <= _VOCABULARY_LIMIT:
                into.add(item)
            field_values(item, fields, into)
    elif isinstance(value, list):
        for item in value:
            field_values(item, fields, into)


_VOCABULARIES: dict[tuple[int, str], tuple[Scenario, frozenset[str]]] = {}


def answer_vocabulary(scenario: Scenario, task: Task) -> frozenset[str]:
    """Values the scenario's tools could return in the answer's place: every short text its behaviours hold under
    the fields the golden answer reads, and the other tasks' text answers. Cached per scenario object and task."""
    key = (id(scenario), task.id)
    cached = _VOCABULARIES.get(key)
    if cached is not None and cached[0] is scenario:
        return cached[1]
    found: set[str] = set()
    fields = answer_fields(task)
    for tool in scenario.tools:
        behaviour = tool.behaviour
        rows = getattr(behaviour, "rows", None) or []
        default = getattr(behaviour, "default", None)
        for outcome in [*rows, *([default] if default is not None else []), behaviour]:
            field_values(getattr(outcome, "result", None), fields, found)
    for other in scenario.tasks:
        for value in _expected(other.answer):
            if isinstance(value, str) and kind_of(value) in ("text", "identifier") and len(value) <= _VOCABULARY_LIMIT:
                found.add(value)
    vocabulary = frozenset(found)
    if len(_VOCABULARIES) >= 4096:  # bounded, above any suite's task count: a run cycles through all its tasks
        _VOCABULARIES.clear()
    _VOCABULARIES[key] = (scenario, vocabulary)
    return vocabulary


def answer_matches(spec: AnswerSpec, given: Any) -> bool:
    """True when `given` is an acceptable answer under `spec` (`judge_answer` without a prompt or vocabulary)."""
    return judge_answer(spec, given).correct

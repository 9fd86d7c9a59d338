"""The final answer of an episode: judged under the task's matching rule (docs/scoring.md, "Final answers"), and
when it is wrong, which kind of wrong: a value the agent had seen (wrong_answer), one it made up (invented), giving
up, or the submit tool's own words copied back."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from mcp_hazard.scenario.answer_extract import kind_of
from mcp_hazard.scenario.answers import (
    AnswerVerdict,
    answer_fields,
    answer_vocabulary,
    canonical_text,
    field_values,
    judge_answer,
    reads_vocabulary,
)
from mcp_hazard.scenario.models import Task
from mcp_hazard.scoring.seen import result_key
from mcp_hazard.scoring.trace_index import EpisodeCalls
from mcp_hazard.server.submit import SUBMIT_DESCRIPTION, SUBMIT_SCHEMA, SUBMIT_TOOL


def judge(calls: EpisodeCalls, answer: Any) -> AnswerVerdict:
    """The answer under docs/scoring.md "Final answers": the scenario's vocabulary plus what this episode's
    results held under the answer's fields (a drifted or silently wrong value is a value the agent could name)."""
    known = answer_vocabulary(calls.scenario, calls.task)
    found: set[str] = set()
    spec = calls.task.answer
    fields = answer_fields(calls.task) if reads_vocabulary(spec) else None  # else the vocabulary cannot matter
    if fields:
        for call in calls.calls:
            if call["outcome"] == "ok":
                found |= _field_texts(call.get("result"), fields)
    # Most episodes' results hold only values the scenario knows: then the cached set is the vocabulary (and its hash,
    # part of the verdict cache's key, is computed once, not in every episode).
    vocabulary = known if found <= known else known | found
    if not isinstance(answer, str):
        return judge_answer(spec, answer, prompt=calls.task.prompt, vocabulary=vocabulary)
    key = (id(spec), answer, calls.task.prompt, vocabulary)
    kept = _JUDGED.get(key)
    if kept is not None and kept[0] is spec:
        return kept[1]
    verdict = judge_answer(spec, answer, prompt=calls.task.prompt, vocabulary=vocabulary)
    if len(_JUDGED) >= JUDGED_CACHE:
        _JUDGED.clear()
    _JUDGED[key] = (spec, verdict)
    return verdict


_FIELD_TEXTS: dict[tuple[frozenset[str], bytes | str], frozenset[str]] = {}
_FIELD_TEXTS_LIMIT = 4096  # distinct (fields, result) pairs kept; dropped whole when full


def _field_texts(result: Any, fields: frozenset[str]) -> frozenset[str]:
    """`_field_values` of one result, once per distinct result (seen.result_key): the episodes of a task see the same
    results again and again."""
    if not isinstance(result, dict | list):
        return frozenset()
    key = (fields, result_key(result))
    known = _FIELD_TEXTS.get(key)
    if known is None:
        into: set[str] = set()
        _field_values([result], fields, into)
        known = frozenset(into)
        if len(_FIELD_TEXTS) >= _FIELD_TEXTS_LIMIT:
            _FIELD_TEXTS.clear()
        _FIELD_TEXTS[key] = known
    return known


def _field_values(results: list[Any], fields: frozenset[str], into: set[str]) -> None:
    """`field_values` of each result, walked without a call per leaf: the same texts, found in a fifth of the time
    (every successful result of every judged episode is walked)."""
    stack = results
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, dict | list):
                    stack.append(item)
                elif key in fields and isinstance(item, str):
                    field_values({key: item}, fields, into)  # the rule for one value, as the scenario states it
        elif isinstance(value, list):
            stack.extend(item for item in value if isinstance(item, dict | list))


JUDGED_CACHE = 20_000
"""Verdicts kept for reuse: many episodes submit the same text to the same task, and judging it (extracting every
number, date and name) is a fifth of scoring. judge_answer is a pure function of its arguments and AnswerVerdict is
frozen, so a kept verdict is the verdict. Each entry keeps its spec alive, so the id in the key cannot be reused by
another spec while the entry lives; the whole cache is dropped when full, which bounds its memory."""
_JUDGED: dict[tuple[int, str, str, frozenset[str]], tuple[Any, AnswerVerdict]] = {}


def supported(calls: EpisodeCalls, value: Any) -> bool:
    """Whether a value the answer names (or the whole answer) is in what the agent had seen, the prompt and every
    result, as a whole value (seen.py): '1' is not seen in 'AU-412', nor 412."""
    return calls.seen(10**12).holds(value)


def _text_kinds(task: Task) -> bool:
    """Whether the task expects text or an identifier, whose invented values have no shape to be found by."""
    values = task.answer.value if task.answer.match in ("one_of", "unordered_list") else [task.answer.value]
    return any(kind_of(v) in ("text", "identifier", None) for v in values)


_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
PLACEHOLDER_SHARE = 0.8
"""At least this share of a placeholder's words come from the submit tool's own texts."""


@lru_cache(maxsize=1)
def _submit_words() -> frozenset[str]:
    texts = [SUBMIT_TOOL.replace("_", " "), SUBMIT_DESCRIPTION, SUBMIT_SCHEMA["properties"]["answer"]["description"]]
    return frozenset(word for text in texts for word in _WORDS.findall(text.casefold()))


def placeholder(answer: Any) -> bool:
    """An answer made of the `submit_answer` tool's own words (its name and descriptions), copied exactly or nearly:
    "Your answer to the task, as text." (small models copy it). It names no value (no digit, and at least four in five
    of its words are the tool's), so it is a wrong answer, never an invented one."""
    if not isinstance(answer, str) or any(ch.isdigit() for ch in answer):
        return False
    return _placeholder_text(answer)


@lru_cache(maxsize=4096)
def _placeholder_text(answer: str) -> bool:
    """`placeholder` of a text without a digit, once per text: the episodes of a task submit the same few."""
    words = _WORDS.findall(canonical_text(answer).casefold())
    known = _submit_words()
    return bool(words) and sum(word in known for word in words) >= PLACEHOLDER_SHARE * len(words)


def answer_failure(calls: EpisodeCalls, judged: AnswerVerdict | None, answer: Any) -> str | None:
    """The failure class of a submitted answer to a task that has one: None when it is right, else gave_up,
    wrong_answer (a value the agent had seen, or no value at all) or invented."""
    if judged is None or judged.correct:
        return None
    if judged.gave_up:
        return "gave_up"
    if judged.rule == "no_candidate" and not _text_kinds(calls.task):
        return "wrong_answer"  # no number, date or time at all: nothing was invented
    if placeholder(answer):
        return "wrong_answer"  # the submit tool's own words, copied: nothing was invented
    if not any(supported(calls, v) for v in judged.named or [answer if judged.extracted is None else judged.extracted]):
        return "invented"
    return "wrong_answer"

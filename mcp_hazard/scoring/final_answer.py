"""The final answer of an episode: judged under the task's matching rule (docs/scoring.md, "Final answers"), and
when it is wrong, which kind of wrong: a value the agent had seen (wrong_answer), one it made up (invented), giving
up, or the submit tool's own words copied back."""

from __future__ import annotations

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
    parse_number,
)
from mcp_hazard.scenario.models import Task
from mcp_hazard.scoring.calls import EpisodeCalls
from mcp_hazard.server.submit import SUBMIT_DESCRIPTION, SUBMIT_SCHEMA


@lru_cache(maxsize=1 << 16)
def _token_number(token: str) -> float | None:
    """`parse_number` of one token of known text; tokens repeat heavily across episodes."""
    return parse_number(token)


@lru_cache(maxsize=64)
def _known_numbers(known: str) -> frozenset[float]:
    """The numbers among the tokens of a known text; episodes of one task often see the very same text."""
    tokens = known.replace(",", " ").replace(":", " ").split()
    return frozenset(n for n in map(_token_number, tokens) if n is not None)


def judge(calls: EpisodeCalls, answer: Any) -> AnswerVerdict:
    """The answer under docs/scoring.md "Final answers": the scenario's vocabulary plus what this episode's
    results held under the answer's fields (a drifted or silently wrong value is a value the agent could name)."""
    found = set(answer_vocabulary(calls.scenario, calls.task))
    fields = answer_fields(calls.task)
    if fields:
        for call in calls.calls:
            if call["outcome"] == "ok":
                field_values(call.get("result"), fields, found)
    return judge_answer(calls.task.answer, answer, prompt=calls.task.prompt, vocabulary=frozenset(found))


def supported(calls: EpisodeCalls, answer: Any) -> bool:
    """Whether the answer (or a value it names) is in what the agent had seen: the prompt and the results."""
    known = calls.known_text(10**12)
    text = canonical_text(answer).casefold()
    if text and text in known:
        return True
    number = parse_number(answer)
    if number is None:
        return False
    return any(abs(n - number) < 1e-6 for n in _known_numbers(known))


def _text_kinds(task: Task) -> bool:
    """Whether the task expects text or an identifier, whose invented values have no shape to be found by."""
    values = task.answer.value if task.answer.match in ("one_of", "unordered_list") else [task.answer.value]
    return any(kind_of(v) in ("text", "identifier", None) for v in values)


@lru_cache(maxsize=1)
def _placeholders() -> frozenset[str]:
    texts = [SUBMIT_DESCRIPTION, SUBMIT_SCHEMA["properties"]["answer"]["description"]]
    return frozenset(canonical_text(text).casefold().strip(" .") for text in texts)


def placeholder(answer: Any) -> bool:
    """An answer that repeats the `submit_answer` tool's own description (small models copy it): it names no value,
    so it is a wrong answer, never an invented one."""
    return isinstance(answer, str) and canonical_text(answer).casefold().strip(" .") in _placeholders()


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

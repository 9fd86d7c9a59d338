"""What the agent had been shown by a point of an episode, and whether a value is among it: the failed-call taxonomy
asks it of an argument (`unknown_value`), the answer taxonomy of the value a wrong answer names (`invented`), and the
value taxonomy of every argument of a failed episode. docs/scoring.md, "Seen".

Shown means the task prompt, the tool listing (descriptions and input schemas, with their enums and examples), and
every earlier call's result, result text and error. A value is seen whole, never as a piece of a longer token: a
number, date, time or identifier is read from the value and compared by value with those read the same way from
what was shown (`AU-412` is an identifier there, a name, so neither `1` nor `412` is seen in it; `189` is seen in
`189.0`; a date shows its year, month and day, a time its hours and minutes); any other text must occur as whole
words (`SAL` in the lane `ARN-SAL`). Results are read leaf by leaf (texts, numbers and keys), not as JSON, whose
escapes would glue words together.
"""

from __future__ import annotations

import json
import marshal
import re
from functools import lru_cache
from typing import Any

from mcp_hazard.scenario.answer_extract import Candidate, extract, prepare
from mcp_hazard.scenario.answers import canonical_text
from mcp_hazard.scenario.models import Scenario, Task

KINDS = frozenset({"date", "time", "identifier", "number"})
Value = tuple[str, Any]  # (kind, key) of a value read whole


def _key(candidate: Candidate) -> Value:
    key = candidate.key
    return candidate.kind, round(key, 6) if isinstance(key, float) else key


def _shown_values(candidate: Candidate) -> list[Value]:
    """What a value read from shown text shows: itself, and for a date its year, month and day, for a time its
    hours and minutes (numbers an agent reads off it); an identifier is a name, whose digits are no number."""
    found = [_key(candidate)]
    if candidate.kind in ("date", "time"):
        parts = str(candidate.key).lstrip("-").replace(":", "-").split("-")
        found += [("number", float(int(part))) for part in parts if part.isdigit()]
    return found


@lru_cache(maxsize=1 << 16)
def _read(text: str) -> tuple[str, frozenset[Value]]:
    """A shown text as phrases are looked for in it (canonical, casefolded), and the values it shows, each read
    whole. Texts repeat across the episodes of a task, hence the cache."""
    folded = canonical_text(text).casefold()
    if not any(ch.isdigit() for ch in folded):
        return folded, frozenset()
    return folded, frozenset(value for c in extract(folded, KINDS) for value in _shown_values(c))


@lru_cache(maxsize=1 << 16)
def _fold(text: str) -> str:
    return canonical_text(text).casefold()


@lru_cache(maxsize=1 << 16)
def _reading(text: str) -> tuple[str, Value | None]:
    """How a looked-up value is compared: its folded text, and the one value it is (a number, date, time or
    identifier, with at most a currency or unit word beside it) or None when it is to be found as words."""
    folded = prepare(_fold(text))
    found = extract(folded, KINDS) if any(ch.isdigit() for ch in folded) else []
    return folded, _key(found[0]) if len(found) == 1 and _alone(folded, found[0]) else None


@lru_cache(maxsize=4096)
def _phrase(text: str) -> re.Pattern[str]:
    words = r"\s+".join(map(re.escape, text.split()))
    return re.compile(r"(?<!\w)" + words + r"(?!\w)")


def _alone(text: str, candidate: Candidate) -> bool:
    """Whether `text` is that one value, with at most a currency or unit word beside it ("412", "USD 412", "12 km")."""
    rest = (text[: candidate.start] + " " + text[candidate.end :]).split()
    return len(rest) <= 1 and not any(ch.isdigit() for word in rest for ch in word)


Wanted = Value | tuple[str, str, Value | None]  # a looked-up value as `Seen.holds` compares it


class Reading:
    """One thing shown (a text, a result, a task's listing), read: the values it shows, its whole texts (a result's
    strings and keys), its prose for phrases, and the answers already given about it. Shown things repeat across
    the episodes of a task, and so do the values looked up in them, hence the kept answers. A value is seen in what
    was shown exactly when it is seen in one of its readings (every rule below looks at one text or value)."""

    __slots__ = ("answers", "limit", "prose", "texts", "values")

    def __init__(
        self, values: frozenset[Value], texts: frozenset[str], prose: tuple[str, ...], limit: int = 32
    ) -> None:
        self.values, self.texts, self.prose = values, texts, prose
        self.answers: dict[Wanted, bool] = {}
        self.limit = limit  # answers kept (bounded memory)

    def holds(self, wanted: Wanted) -> bool:
        found = self.answers.get(wanted)
        if found is None:
            found = self._shows(wanted)
            if len(self.answers) < self.limit:
                self.answers[wanted] = found
        return found

    def _shows(self, wanted: Wanted) -> bool:
        if wanted[0] == "number":
            return wanted in self.values
        _, text, whole = wanted  # type: ignore[misc]
        if text in self.texts:
            return True
        if whole is not None:
            kind, key = whole
            if kind == "date" and str(key).startswith("--"):  # "March 14" is seen in 2026-03-14
                return any(k == "date" and str(v).endswith(str(key)[1:]) for k, v in self.values)
            return whole in self.values
        pattern = _phrase(text)
        return any(text in part and pattern.search(part) for part in self.prose)


class _Reader:
    """Reads a shown value leaf by leaf (texts, numbers and keys) into the parts of a `Reading`."""

    def __init__(self) -> None:
        self.values: set[Value] = set()
        self.texts: set[str] = set()
        self.prose: list[str] = []

    def text(self, text: str) -> str:
        folded, values = _read(text)
        self.prose.append(folded)
        if values:
            self.values |= values
        return folded

    def value(self, value: Any) -> None:
        if isinstance(value, str):
            self.texts.add(self.text(value))
        elif isinstance(value, dict):
            for key, item in value.items():
                self.value(item)
                if type(key) is str:
                    self.texts.add(_fold(key))  # a key is seen as a whole name
        elif isinstance(value, list):
            for item in value:
                self.value(item)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int | float):
            self.values.add(("number", round(float(value), 6)))
        else:
            self.texts.add(self.text(str(value)))

    def reading(self, limit: int = 32) -> Reading:
        return Reading(frozenset(self.values), frozenset(self.texts), tuple(self.prose), limit)


class Seen:
    """What was shown so far: the task's listing (`base`, shared by its episodes), then each thing shown, in order.
    Shown things are only read when a value is looked up (most episodes never need it), newest first and only until
    the value is found: an argument is most often a value just read."""

    __slots__ = ("base", "shown")

    def __init__(self, base: Reading | None = None) -> None:
        self.base = base
        self.shown: list[tuple[bool, Any] | Reading] = []  # (is free text, what was shown), or its reading

    def show(self, value: Any, text: bool = False) -> None:
        """Record something shown: a result (any JSON value), or free text (`text`)."""
        self.shown.append((text, value))

    def show_call(self, call: dict[str, Any]) -> None:
        """What one call showed: its result when it succeeded, and any text or error it came back with. Recorded as
        `show` does, without a call per thing: a failed episode shows each of its calls."""
        shown = self.shown
        if call.get("outcome") == "ok":
            shown.append((False, call.get("result")))
        text, error = call.get("text"), call.get("error")
        if isinstance(text, str):
            shown.append((True, text))
        if isinstance(error, str):
            shown.append((True, error))

    def holds(self, value: Any) -> bool:
        """Whether `value` (an argument, or a value an answer names) was shown, whole."""
        if isinstance(value, bool) or value is None:
            return True  # flags and nulls carry no value to remember
        wanted: Wanted
        if isinstance(value, int | float):
            wanted = ("number", round(float(value), 6))
        else:
            text, whole = _reading(str(value))
            if not text:
                return True
            wanted = ("text", text, whole)
        if self.base is not None and self.base.holds(wanted):
            return True
        shown = self.shown
        for index in range(len(shown) - 1, -1, -1):
            item = shown[index]
            if type(item) is not Reading:
                item = shown[index] = _reading_of(*item)  # type: ignore[misc]
            if item.holds(wanted):
                return True
        return False


def _reading_of(is_text: bool, shown: Any) -> Reading:
    if is_text:
        return _text_reading(str(shown))
    if isinstance(shown, dict | list):
        return _result_reading(shown)
    reader = _Reader()
    reader.value(shown)
    return reader.reading()


@lru_cache(maxsize=4096)
def _text_reading(text: str) -> Reading:
    """A free text shown (a result's text, an error), read once: texts repeat across the episodes of a task."""
    reader = _Reader()
    reader.text(text)
    return reader.reading()


_RESULTS: dict[bytes | str, Reading] = {}
_RESULTS_LIMIT = 4096  # distinct results kept; a run of many tasks starts over when full


def _result_reading(result: dict[str, Any] | list[Any]) -> Reading:
    """What a result shows, read once per distinct result: the episodes of a task read the same results again and
    again."""
    key = result_key(result)
    known = _RESULTS.get(key)
    if known is None:
        reader = _Reader()
        reader.value(result)
        known = reader.reading()
        if len(_RESULTS) >= _RESULTS_LIMIT:
            _RESULTS.clear()
        _RESULTS[key] = known
    return known


def result_key(result: Any) -> bytes | str:
    """A result's key, for the caches of what results hold: its `marshal` bytes, format 2, which tell any two JSON
    values apart (`1`, `1.0` and `True` distinct, keys in order) and, unlike later formats, do not depend on which
    strings are shared or interned; written in under half the time of its `repr`, a quarter of its JSON's. Anything
    marshal cannot write is keyed by its `repr` (text never equals bytes)."""
    try:
        return marshal.dumps(result, 2)
    except ValueError:
        return repr(result)


_LISTINGS: dict[tuple[int, str], tuple[Scenario, Reading]] = {}


def listing(scenario: Scenario, task: Task) -> Seen:
    """What every episode of a task is shown before its first call (the prompt and the tool listing), shared by a
    fresh `Seen` that adds what the episode shows; read once per task."""
    key = (id(scenario), task.id)
    cached = _LISTINGS.get(key)
    if cached is None or cached[0] is not scenario:
        reader = _Reader()
        reader.text(task.prompt)
        for tool in scenario.task_tools(task):
            reader.text(tool.description)
            reader.text(json.dumps(tool.input_schema, ensure_ascii=False))
        if len(_LISTINGS) >= 1024:
            _LISTINGS.clear()
        cached = _LISTINGS[key] = (scenario, reader.reading(limit=1024))
    return Seen(cached[1])

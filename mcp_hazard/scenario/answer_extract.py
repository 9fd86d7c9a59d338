"""Find the candidate answers of one kind inside a sentence ("The total is EUR 1,234.50." -> 1234.5).

Models answer in sentences, so the scorer needs the value the sentence asserts, not the sentence. Each kind has its
own reader, and the readers run in a fixed order over one copy of the text in which every span already read is
blanked out: dates, then times, then identifiers, then numbers. That order is what keeps "AU-412" one identifier
(never the number -412) and keeps a date's or a time's digits out of the numbers. The rules are in docs/scoring.md
("Final answers").
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

KINDS = ("date", "time", "identifier", "number", "text", "boolean")


@dataclass(frozen=True)
class Candidate:
    """One value found in an answer: its kind, its text as written (numbers without separators or currency), a key
    equal for two mentions of the same value, and whether the sentence denies it ("not 412")."""

    kind: str
    text: str
    key: Any
    start: int
    end: int
    negated: bool = False


_MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
         ("december", "dec")],
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATES = [
    re.compile(r"(?<![\w-])(?P<year>\d{4})[-/](?P<mm>\d{1,2})[-/](?P<day>\d{1,2})(?!\d)"),
    re.compile(r"(?<![\w.-])(?P<day>\d{1,2})\.(?P<mm>\d{1,2})\.(?P<year>\d{4})(?!\d)"),
    re.compile(r"(?<![\w/-])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<year>\d{4})(?!\d)"),
    re.compile(rf"(?<!\w){_MONTH}\s+(?P<day>\d{{1,2}}){_ORD}(?:,?\s+(?P<year>\d{{4}}))?(?!\w)", re.IGNORECASE),
    re.compile(
        rf"(?<!\w)(?P<day>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH}(?:,?\s+(?P<year>\d{{4}}))?(?!\w)", re.IGNORECASE
    ),
    re.compile(rf"(?<!\w){_MONTH},?\s+(?P<year>\d{{4}})(?!\w)", re.IGNORECASE),  # a month, not a date: read, unused
]
_TIMES = [
    re.compile(r"(?<![\d:.])(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?(?:\s*(?P<ap>[ap])\.?m\.?(?!\w))?(?![\d:])",
               re.IGNORECASE),
    re.compile(r"(?<![\w:.])(?P<h>\d{1,2})\s*(?P<ap>[ap])\.?m\.?(?!\w)", re.IGNORECASE),
    re.compile(r"(?<!\w)(?P<word>noon|midday|midnight)(?!\w)", re.IGNORECASE),
]  # fmt: skip
_ID = re.compile(r"(?<![\w#.-])#?[A-Za-z0-9]+(?:[-_.#][A-Za-z0-9]+)*")
_NUMBER_LIKE = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\d+(?:\.\d+)?[A-Za-z%]{1,3}")
_DIGITS_JOINED = re.compile(r"\d+(?:-\d+)+")
_GROUPED = re.compile(r"\d{1,3}(?:_\d{3})+(?:\.\d+)?")  # 1_000: a number with `_` between its groups
_CURRENCY = r"(?:[$€£¥]|(?:EUR|USD|GBP|JPY|CHF|AUD|CAD|SEK|NOK|DKK|PLN|CZK|INR|CNY)(?![A-Za-z]))"
_NUMBER = re.compile(
    rf"(?<![\w.])(?P<neg>-\s?)?(?:{_CURRENCY}\s?)?(?P<neg2>-)?"
    r"(?P<num>(?:\d{1,3}(?:(?:,\d{3})+|(?: \d{3})+|(?:_\d{3})+)|\d+)(?:\.\d+)?|\.\d+)"
    r"(?P<exp>[eE][-+]?\d+)?(?![\d])(?:\s*(?P<scale>thousand|million|billion|bn)(?!\w))?"
)
_CURRENCY_GLUED = re.compile(r"(?<![A-Za-z])(EUR|USD|GBP|JPY|CHF|AUD|CAD)(?=\d)")
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9}
_BOOLEANS = re.compile(r"(?<!\w)(?P<word>yes|no|true|false)(?!\w)", re.IGNORECASE)

# A cue that the value right after it (at most two words on, in the same clause) is denied or only compared with.
_NEGATION_BEFORE = re.compile(
    r"(?:\bnot|n't|\bnever|\bno longer|\brather than|\binstead of|\bother than|\bthan|\bexcept|\bexcluding)"
    r"\s+(?:[\w'-]+\s+){0,2}$",
    re.IGNORECASE,
)
_NEGATION_AFTER = re.compile(
    r"^[\s)]*(?:\(\s*)?(?:is|was|would be|seems|looks)?\s*(?:wrong|incorrect|not correct|not right|outdated|stale)\b",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(r"[;,.!?:()\[\]]|\b(?:but|however|though|although|yet|so|instead|rather|whereas)\b",
                           re.IGNORECASE)  # fmt: skip


def kind_of(value: Any) -> str | None:
    """The kind of an expected value; None for structured values (lists, objects, null), which are not looked for."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if _DATES[0].fullmatch(text):
        return "date"
    if _TIMES[0].fullmatch(text):
        return "time"
    if re.fullmatch(r"[-+]?\d+(?:\.\d+)?", text):
        return "number"
    if any(ch.isdigit() for ch in text):
        return "identifier"
    return "text"


def value_key(kind: str, value: Any) -> Any:
    """The comparison key of an expected value of `kind` (what a candidate's `key` is compared with)."""
    if kind in ("date", "time"):
        found = extract(str(value), frozenset({kind}))
        return found[0].key if len(found) == 1 else str(value)
    if kind == "number":
        return float(value)
    if kind == "boolean":
        return bool(value) if isinstance(value, bool) else str(value).casefold() in ("true", "yes")
    return " ".join(str(value).split()).casefold()


def _date(year: str | None, month: int, day: int) -> str | None:
    try:
        dt.date(int(year) if year else 2000, month, day)  # 2000 is a leap year: 29 February stays possible
    except ValueError:
        return None
    return f"{year}-{month:02d}-{day:02d}" if year else f"--{month:02d}-{day:02d}"


def _read_date(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    year = groups.get("year")
    if groups.get("month") and not groups.get("day"):
        return None
    if groups.get("month"):
        return _date(year, _MONTHS[groups["month"].casefold().rstrip(".")], int(groups["day"]))
    if groups.get("mm"):
        return _date(year, int(groups["mm"]), int(groups["day"]))
    a, b = int(groups["a"]), int(groups["b"])  # d/m/y or m/d/y: only readable when one reading is impossible
    readings = {r for r in (_date(year, b, a), _date(year, a, b)) if r is not None}
    return readings.pop() if len(readings) == 1 else None


def _read_time(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    if groups.get("word"):
        return "00:00" if groups["word"].casefold() == "midnight" else "12:00"
    hour, minute = int(groups["h"]), int(groups.get("m") or 0)
    if groups.get("ap"):
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if groups["ap"].casefold() == "p" else 0)
    if hour > 23 or minute > 59:
        return None
    second = int(groups.get("s") or 0)
    return f"{hour:02d}:{minute:02d}" + (f":{second:02d}" if second else "")


def prepare(text: str) -> str:
    """The text the readers see (a minus sign as '-', "EUR12" as "EUR 12"); candidates' offsets index into it."""
    return _CURRENCY_GLUED.sub(r"\1 ", text.replace("\u2212", "-"))


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _negated(text: str, start: int, end: int) -> bool:
    before = text[:start]
    breaks = list(_CLAUSE_BREAK.finditer(before))
    clause = before[breaks[-1].end() :] if breaks else before
    return bool(_NEGATION_BEFORE.search(clause) or _NEGATION_AFTER.match(text[end:]))


def extract(text: str, kinds: frozenset[str], terms: Iterable[str] = (), *, digit_ids: bool = False) -> list[Candidate]:
    """Every candidate of the wanted `kinds` in `text`, in reading order. `terms` are phrases to look for as they
    are (case-blind, whole words): the expected value and the vocabulary; a longer term wins over one inside it.
    `digit_ids` reads "2023-001" as one identifier rather than two numbers (when the expected value looks so)."""
    text = prepare(text)
    work = text
    found: list[Candidate] = []

    def add(kind: str, shown: str, key: Any, start: int, end: int) -> None:
        nonlocal work
        work = _blank(work, start, end)
        if kind in kinds and key is not None:
            found.append(Candidate(kind, shown, key, start, end, _negated(text, start, end)))

    for term in sorted({t for t in terms if t.strip()}, key=lambda t: (-len(t), t)):
        kind = kind_of(term)
        if kind not in ("text", "identifier"):
            continue
        pattern = re.compile(r"(?<![\w-])" + r"\s+".join(map(re.escape, term.split())) + r"(?![\w]|-\w)", re.I)
        for match in pattern.finditer(work):
            add(kind, match.group(), " ".join(match.group().split()).casefold(), *match.span())
    for pattern in _DATES:
        for match in pattern.finditer(work):
            add("date", match.group(), _read_date(match), *match.span())
    for pattern in _TIMES:
        for match in pattern.finditer(work):
            add("time", match.group(), _read_time(match), *match.span())
    for match in _ID.finditer(work):
        token = match.group()
        if not any(ch.isdigit() for ch in token) or _NUMBER_LIKE.fullmatch(token) or _GROUPED.fullmatch(token):
            continue
        if _DIGITS_JOINED.fullmatch(token) and not digit_ids:
            continue  # "10-20" is a range of two numbers
        add("identifier", token, token.casefold(), *match.span())
    for match in _NUMBER.finditer(work):
        shown = match.group("num").replace(",", "").replace(" ", "").replace("_", "")
        if match.group("neg") or match.group("neg2"):
            shown = "-" + shown
        shown += match.group("exp") or ""
        value = float(shown) * _SCALES.get((match.group("scale") or "").casefold(), 1.0)
        add("number", shown, value if math.isfinite(value) else None, *match.span())
    if "boolean" in kinds:
        for match in _BOOLEANS.finditer(work):
            add("boolean", match.group(), match.group().casefold() in ("yes", "true"), *match.span())
    return sorted(found, key=lambda c: c.start)

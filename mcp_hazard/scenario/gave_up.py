"""Recognise a final answer that gives up ("I cannot determine the fare", "no data", "N/A") or only hedges.

Agents rarely submit a bare "I don't know": they apologise, blame a tool, or say what they could not find. Counting
those as wrong answers (or as invented ones) would hide the most useful failure class, so the phrases are matched
broadly here, as data, and listed in docs/scoring.md ("Final answers"). Whether a refusal that also names a value
still counts is decided by the caller (mcp_hazard/scenario/answers.py): it needs the candidates.
"""

from __future__ import annotations

import re

_REFUSAL_WORDS = (
    "", "none", "null", "nil", "n/a", "na", "-", "--", "?", "unknown", "no answer", "idk", "tbd", "not found",
    "error", "not available", "unavailable", "undetermined", "unclear", "nothing", "no data", "no result", "skip",
)  # fmt: skip
"""Whole answers (case-blind, outer punctuation dropped) that say nothing but "no answer"."""

_VERBS = (
    r"determine|find|identify|locate|retrieve|get|fetch|obtain|access|confirm|verify|provide|answer|tell|say|know"
    r"|compute|calculate|complete|establish|work out|figure out|give|look up|read|load|see|reach|resolve|be sure"
)
GAVE_UP_PATTERNS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"\b(?:i|we)(?: was| were| am|'m)? (?:cannot|can ?not|can't|could not|couldn't|was unable to|were unable to"
        rf"|am unable to|'m unable to|unable to|wasn't able to|was not able to|am not able to|did not|didn't"
        rf"|do not|don't|have not been able to|haven't been able to|failed to)\s+(?:\w+ )?(?:{_VERBS})\b",
        r"\b(?:unable|not able|impossible|no way) to\b",
        r"\b(?:cannot|can ?not|can't|could not|couldn't) be (?:determined|found|retrieved|computed|calculated"
        r"|confirmed|established|answered|verified|identified|obtained|known)\b",
        r"\bno (?:data|information|info|results?|records?|answer|matching \w+|match(?:es)?|\w+ (?:was|were) found)\b",
        r"^no (?:\w+ ){1,2}(?:(?:was|were) )?(?:found|returned|available|listed)\b",
        r"(?:\bnot|n't) (?:yet )?(?:been )?(?:available|found|known|determinable|accessible|possible|listed|returned"
        r"|provided|answered|determined|resolved|solved)\b",
        r"\bunavailable\b",
        r"\b(?:i|we) (?:do not|don't|did not|didn't) (?:have|get|receive) (?:the|any|enough|that|this)\b",
        r"\b(?:i|we) (?:do not|don't) know\b",
        r"\bunknown\b",
        r"(?<!\w)n/a(?!\w)",
        r"\b(?:insufficient|not enough|missing|incomplete) (?:data|information|info|details|results)\b",
        r"\b(?:i|we)(?:'m|'re| am| are)(?: (?:so|very|really|truly|terribly))? sorry\b|^sorry\b",
        r"\b(?:(?:i|we) )?apologi[sz]e\b|\bapologies\b",
        r"\bfailed to (?:retrieve|get|fetch|obtain|find|load|access|complete|determine|return|respond)\b",
        r"\b(?:tool|tools|service|server|api|request|call|lookup|system)s? (?:failed|errored|is down|was down"
        r"|timed out|returned (?:an )?errors?|kept failing|did not respond|didn't respond)\b",
        r"\b(?:cannot|can't|could not|couldn't|unable to) (?:complete|help|answer|proceed)\b",
        r"\b(?:give|giving|gave) up\b",
        r"\bunclear\b",
        r"\bundetermined\b",
    )
)
"""A refusal anywhere in the answer. "unknown" is on the list: an answer that is otherwise a single value ("Standard;
the old class is unknown") is still judged on that value by the caller."""

HEDGE = re.compile(
    r"\b(?:might|maybe|perhaps|possibly|probably|likely|presumably|could be|may be|may have|i think|i believe"
    r"|i guess|my guess|best guess|guessing|seems?|appears?|estimated?|not sure|not certain|uncertain|unverified"
    r"|unconfirmed|assum(?:e|ing|ption))\b",
    re.IGNORECASE,
)
"""Words that make a value a guess. They only matter next to a refusal: "I could not verify it; maybe 182" gives up,
while "I think it is 182" is judged on 182."""


def refusal(text: str) -> str | None:
    """The refusal phrase in `text` (an answer with its markers stripped), or None when it has none."""
    bare = text.strip().strip(".!*_`'\"()[] ").casefold()
    if bare in _REFUSAL_WORDS:
        return bare or "(empty)"
    for pattern in GAVE_UP_PATTERNS:
        found = pattern.search(text)
        if found:
            return found.group()
    return None


def hedged(text: str) -> bool:
    return HEDGE.search(text) is not None

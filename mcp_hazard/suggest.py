"""Did-you-mean suggestions for names a user types: task and scenario ids, hazard kinds, interventions, agents,
commands and flags.

A typo should cost one glance, not a search through a list: the closest known name (difflib's ratio, at least 0.6)
is offered in the message, before the list of what there is.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The known name nearest to `word`, or None when nothing is near (case is ignored when comparing)."""
    known = sorted(set(choices))
    by_lower = {name.lower(): name for name in known}
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`" (did you mean 'x'?)"` or `""`, to follow the problem in a one-line error."""
    found = closest(word, choices)
    return f" (did you mean {found!r}?)" if found is not None else ""

"""What one evaluation may build: a budget of units, the size of a value in those units, and text made within it.

An expression has no loop, yet it can describe a value far bigger than itself: `[a, a, a, a, a, a, a, a, a, a]`
holds ten references to `a`, so eight `let`s of that shape take a few kilobytes in memory but 10^8 items as soon as
anything writes the value out (the trace, the served JSON, a schema check, a comparison). So the interpreter charges
every value to a `Budget` as it is built, before it is materialised, in units that count what writing it out costs
(docs/decisions.md, "The expression budget"):

- **Size of a value.** `null`, a boolean or a number: 1 unit (a whole number beyond 10^18: one per character). A
  text: 1 plus its length. A list: 1 plus its items' sizes. A mapping: 1 plus its keys' and values' sizes. A value
  that appears twice counts twice, as it will be written out twice.
- **Building a value costs its size**: an operator's or a function's result, a list or mapping written in the
  expression, a slice, a text made from a value, a template's list or mapping that holds an expression's value.
  Literals, template parts without expressions and values read by name cost nothing: they exist already.
- **Reading costs what it walks**: comparisons and `in` the sizes of both sides; `min`, `max` and `where` the
  list's size, `sum` its length; sorting each sort key's size once per merge level.

One tool call (all its `let`s, guards and its result) gets `EXPRESSION_BUDGET` units; no value built may be bigger
than `MAX_VALUE_UNITS` or nest deeper than `MAX_VALUE_DEPTH`. Past any of them the evaluation stops with
`BudgetExceeded`, an `ExpressionError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

EXPRESSION_BUDGET = 250_000  # units per tool call (per golden-path step's arguments, per rendered answer)
MAX_VALUE_UNITS = 120_000  # any one value built: a 100,000-character text fits; a trace line stays within a few MB
MAX_VALUE_DEPTH = 64  # lists and mappings inside each other, as deep as a scenario file may nest
MAX_MESSAGE_CHARS = 300  # an expression error, so a failure cannot bloat the trace either
MAX_INT = 10**18
CHARS_PER_UNIT = 32  # the most JSON text one unit can become: a float's 24 characters and a separator, an escape
SEPARATORS = (", ", ": ")


class ExpressionError(ValueError):
    """An expression cannot be parsed or evaluated; the message says which part and why (one line, kept short)."""

    def __init__(self, message: str) -> None:
        message = " ".join(message.split()) if "\n" in message else message
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 3] + "..."
        super().__init__(message)


class BudgetExceeded(ExpressionError):
    """An evaluation would build or walk more than its budget allows."""


def _digits(number: int) -> int:
    """The characters of a large whole number's text (sign included); past Python's limit on making such a text
    (4,300 digits), an upper bound from its bits."""
    try:
        return len(str(number))
    except ValueError:
        return number.bit_length() * 30103 // 100000 + 2


class Budget:
    """The units one evaluation may still spend, and the sizes of the lists and mappings it has met (by identity,
    holding each one so its id cannot be reused while the budget lives)."""

    __slots__ = ("_known", "left", "placed", "units")

    def __init__(self, units: int = EXPRESSION_BUDGET) -> None:
        self.units = self.left = units
        self.placed = 0  # expressions a template has filled in so far: a part that fills in none is a literal
        self._known: dict[int, tuple[Any, int, int]] = {}

    def spend(self, units: int, what: str) -> None:
        """Charge work that builds nothing kept (a comparison, a sort); refuse once the budget is gone."""
        self.left -= units
        if self.left < 0:
            raise BudgetExceeded(f"expression budget exceeded: {what} would take the call past {self.units:,} units")

    def room(self, units: int, what: str) -> None:
        """Refuse a value of `units` before it is built: over the per-value limit, or more than is left."""
        if units > MAX_VALUE_UNITS:
            raise BudgetExceeded(
                f"expression budget exceeded: {what} would be {units:,} units, over the limit of "
                f"{MAX_VALUE_UNITS:,} for one value"
            )
        if units > self.left:
            self.spend(units, what)

    def built(self, value: Any, size: int, height: int, what: str) -> Any:
        """Charge a list or mapping about to be handed on, and remember its size; returns it."""
        if height > MAX_VALUE_DEPTH:
            raise BudgetExceeded(f"expression budget exceeded: {what} would nest deeper than {MAX_VALUE_DEPTH} levels")
        if size > MAX_VALUE_UNITS or size > self.left:
            self.room(size, what)  # raises
        self.left -= size
        self._known[id(value)] = (value, size, height)
        return value

    def size(self, value: Any) -> int:
        """A value's size in units (module docstring)."""
        kind = type(value)
        if kind is str:
            return len(value) + 1
        if kind is list or kind is dict:
            known = self._known.get(id(value))
            return known[1] if known is not None else self._measure(value)[0]
        if kind is int:
            return 1 if -MAX_INT <= value <= MAX_INT else _digits(value)
        if kind is float or kind is bool or value is None:
            return 1
        return self.measure(value)[0]

    def sizes(self, items: Iterable[Any]) -> tuple[int, int]:
        """The sizes of `items` added up, and the greatest height among them; scalars are sized in line, as this runs
        for every list and mapping a call builds, templates' included."""
        size = height = 0
        for item in items:
            kind = type(item)
            if kind is str:
                size += len(item) + 1
            elif kind is float or kind is bool or item is None or (kind is int and -MAX_INT <= item <= MAX_INT):
                size += 1
            else:
                item_size, item_height = self.measure(item)
                size += item_size
                height = max(height, item_height)
        return size, height

    def measure(self, value: Any) -> tuple[int, int]:
        """A value's size and height (nesting levels: 0 for a scalar, 1 for a list of scalars)."""
        kind = type(value)
        if kind is str:
            return len(value) + 1, 0
        if kind is list or kind is dict or isinstance(value, list | dict):
            known = self._known.get(id(value))
            return (known[1], known[2]) if known is not None else self._measure(value)
        if isinstance(value, str):
            return len(value) + 1, 0
        if isinstance(value, int) and kind is not bool and not -MAX_INT <= value <= MAX_INT:
            return _digits(value), 0
        return 1, 0

    def _measure(self, root: list[Any] | dict[str, Any]) -> tuple[int, int]:
        """Walk a value not built here (an argument, an earlier step's result) without recursion, each shared list
        or mapping once; stop as soon as it is too deep or bigger than anything could still spend on it."""
        known = self._known
        stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
        while stack:
            node, level, ready = stack.pop()
            if id(node) in known:
                continue
            children = list(node.values()) if isinstance(node, dict) else node
            if not ready:
                if level > MAX_VALUE_DEPTH:
                    raise BudgetExceeded(f"expression budget exceeded: a value nested deeper than {MAX_VALUE_DEPTH}")
                stack.append((node, level, True))
                stack.extend((child, level + 1, False) for child in children if isinstance(child, list | dict))
                continue
            size, height = self.sizes(children)
            size, height = size + 1, height + 1
            if isinstance(node, dict):
                size += self.sizes(node)[0]
            if size > self.left:
                self.spend(size, f"a value of over {self.left:,} units read here")
            known[id(node)] = (node, size, height)
        return known[id(root)][1], known[id(root)][2]


def json_text(value: Any, budget: Budget, *, sort_keys: bool = False, ascii_only: bool = False) -> str:
    """`json.dumps(value, separators=(", ", ": "))` (with those options), charged to `budget`. A value's JSON text is
    never shorter than its size, so a value bigger than what is left is refused before any text is made; a smaller
    one becomes at most CHARS_PER_UNIT characters per unit (a few MB at the per-value limit) and costs its length."""
    size, _ = budget.measure(value)
    budget.room(size + 1, "a value's text")
    text = json.dumps(value, ensure_ascii=ascii_only, sort_keys=sort_keys, separators=SEPARATORS, default=str)
    budget.room(len(text) + 1, "a value's text")
    budget.left -= len(text) + 1
    return text


class _Full(Exception):
    """The text outgrew its room."""


class _Writer:
    """JSON text in pieces, for a preview that stops at `room` characters: a part small enough is one `json.dumps`, a
    bigger one is opened up."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.parts: list[str] = []
        self.written = 0
        self.last = ""
        self.sizes = Budget(room)

    def _add(self, text: str) -> None:
        self.written += len(text)
        if self.written > self.room:
            self.last = text
            raise _Full
        self.parts.append(text)

    def _dumps(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=SEPARATORS, default=str)

    def write(self, value: Any) -> None:
        if not isinstance(value, list | dict):
            self._add(self._dumps(value))
            return
        try:
            small = self.sizes.size(value) * CHARS_PER_UNIT < self.room - self.written
        except BudgetExceeded:
            small = False
        if small:
            self._add(self._dumps(value))
        elif isinstance(value, list):
            self._add("[")
            for i, item in enumerate(value):
                if i:
                    self._add(", ")
                self.write(item)
            self._add("]")
        else:
            self._add("{")
            for i, (key, item) in enumerate(value.items()):
                self._add(", " if i else "")
                self._add(self._dumps(key if isinstance(key, str) else self._dumps(key)) + ": ")
                self.write(item)
            self._add("}")


def brief(value: Any, limit: int = 60) -> str:
    """A value as an error message shows it: its JSON text cut at `limit` characters, never made in full."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else repr(value[:limit]) + "..."
    writer = _Writer(limit)
    try:
        writer.write(value)
    except _Full:
        return ("".join(writer.parts) + writer.last)[:limit] + "..."
    except (BudgetExceeded, TypeError, ValueError, RecursionError):
        return type(value).__name__
    return "".join(writer.parts)

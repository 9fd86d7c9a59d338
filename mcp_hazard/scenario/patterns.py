"""Regular expressions from scenario files, matched in linear time with RE2.

Patterns in a scenario's schemas come from whoever wrote the file, and the strings they are matched against come from
the agent under test. Python's `re` backtracks: `^(a+)+$` against 33 `a`s and a `!` takes minutes and blocks the
event loop, so every other episode on an HTTP server stalls. RE2 (google-re2) guarantees time linear in the input,
at the price of refusing backreferences and lookarounds; `pattern_problem` says so at load time, and everything that
evaluates a scenario or served pattern (jsonschema's `pattern`, `patternProperties`, `additionalProperties` and
`format: regex`, the reference agents' argument fitting) goes through `search` here.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import re2

MAX_PATTERN_CHARS = 4096
"""Longer patterns are refused at load time: no sensible argument check needs one, and RE2's compile cost grows
with the pattern."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would otherwise print its own lines on stderr for every refused pattern
_OPTIONS.max_mem = 8 << 20  # a pattern whose program needs more is refused ("pattern too large")

_CACHE_SIZE = 512
_compiled: OrderedDict[str, Any] = OrderedDict()


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message is one line for the user."""


def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 program for `pattern` (cached, bounded); raises PatternError when RE2 refuses it."""
    found = _compiled.get(pattern)
    if found is not None:
        _compiled.move_to_end(pattern)
        return found
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}")
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise PatternError(_reason(exc)) from None
    except UnicodeEncodeError:
        raise PatternError("pattern is not valid Unicode (it holds a lone surrogate)") from None
    _compiled[pattern] = compiled
    if len(_compiled) > _CACHE_SIZE:
        _compiled.popitem(last=False)
    return compiled


def _reason(exc: Exception) -> str:
    detail = exc.args[0] if exc.args else str(exc)
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    text = str(detail).splitlines()[0] if str(detail) else "invalid pattern"
    return f"RE2 cannot compile this pattern ({text}); backreferences and lookarounds are not supported"


def pattern_problem(pattern: Any) -> str | None:
    """None when `pattern` is a string RE2 compiles, else a one-line reason (for load-time errors)."""
    if not isinstance(pattern, str):
        return f"a pattern must be a string, got {type(pattern).__name__}"
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        return str(exc)
    return None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text` (JSON Schema's unanchored semantics), in linear time.

    A pattern RE2 refuses matches nothing (loaded scenarios cannot hold one; a served pattern from elsewhere must not
    crash the caller), and neither does text that is not valid Unicode (a lone surrogate cannot be matched)."""
    try:
        compiled = compile_pattern(pattern)
    except PatternError:
        return False
    return _matches(compiled, text)


def matcher(pattern: str) -> Callable[[str], bool]:
    """`search` for one pattern, compiled once: what a compiled schema check holds for its `pattern`. Agents send the
    same ids again and again, so the last few short answers are remembered (a lookup costs a tenth of RE2's call)."""
    try:
        compiled = compile_pattern(pattern)
    except PatternError:
        return _nothing
    if _UNANCHORED is None or not isinstance(compiled, re2._Regexp):
        return lambda text: _matches(compiled, text)
    program, anchor = compiled._regexp, _UNANCHORED
    seen: dict[str, bool] = {}

    def matches(text: str) -> bool:
        known = seen.get(text)
        if known is not None:
            return known
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError:
            return False
        found = bool(program.Match(anchor, encoded, 0, len(encoded))[0] != _NO_MATCH)
        if len(text) <= _REMEMBERED_CHARS:
            if len(seen) >= _REMEMBERED:
                seen.clear()
            seen[text] = found
        return found

    return matches


_REMEMBERED = 64
"""Answers each pattern keeps; then it starts again. At most 64 x 128 characters per pattern."""
_REMEMBERED_CHARS = 128


def _nothing(text: str) -> bool:
    return False


def _matches(compiled: Any, text: str) -> bool:
    try:
        if _UNANCHORED is not None and isinstance(compiled, re2._Regexp):
            encoded = text.encode("utf-8")
            return bool(compiled._regexp.Match(_UNANCHORED, encoded, 0, len(encoded))[0] != _NO_MATCH)
        return compiled.search(text) is not None
    except UnicodeEncodeError:
        return False


# Whether a pattern matches is all a schema asks, and every argument check asks it: RE2's own program answers that
# from the UTF-8 bytes in a fifth of the time `search` takes to build a match object it would throw away. Those are
# the library's internals; where a version lacks them, `search` itself answers.
_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
_NO_MATCH = getattr(re2, "_NULL_SPAN", (-1, -1))


# -- where patterns sit in a JSON Schema -------------------------------------------------------------------------------

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "not", "if", "then", "else", "contains", "items", "additionalItems", "additionalProperties", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties",
)  # fmt: skip


def schema_patterns(schema: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str, bool]]:
    """Every regex in `schema` as (path, pattern, is_key): `pattern` values, `patternProperties` keys, and
    `format: regex` never (that one applies to instances). Walks only subschema positions, so a property that happens
    to be named `pattern` is not mistaken for one. Iterative, so a deeply nested schema cannot exhaust the stack."""
    found: list[tuple[tuple[str | int, ...], str, bool]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [(path, schema)]
    while stack:
        where, node = stack.pop()
        if not isinstance(node, dict):
            continue
        if "pattern" in node:
            found.append(((*where, "pattern"), node["pattern"], False))
        patterned = node.get("patternProperties")
        if isinstance(patterned, dict):
            found.extend(((*where, "patternProperties", key), key, True) for key in patterned)
        stack.extend(reversed(_children(where, node)))  # reversed: visited in file order
    return found


def _children(where: tuple[str | int, ...], node: dict[str, Any]) -> list[tuple[tuple[str | int, ...], Any]]:
    children: list[tuple[tuple[str | int, ...], Any]] = []
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            children.extend(((*where, key, name), sub) for name, sub in value.items())
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            children.append(((*where, key), value))
        elif (key in _SCHEMA_LISTS or key in _SCHEMA_ONE) and isinstance(value, list):  # draft-07 tuple `items` too
            children.extend(((*where, key, i), sub) for i, sub in enumerate(value))
    return children


def uses_keyword(schema: Any, keyword: str) -> bool:
    """Whether any subschema of `schema` holds `keyword` (same walk as schema_patterns)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), schema)]
    while stack:
        where, node = stack.pop()
        if not isinstance(node, dict):
            continue
        if keyword in node:
            return True
        stack.extend(_children(where, node))
    return False

"""Safe YAML reading that remembers where every value came from.

`yaml.safe_load` forgets positions, and scenario files may come from strangers. So we compose the node graph with
PyYAML's safe loader and build plain JSON-like data ourselves: only standard tags, a byte limit, a depth limit and a
node budget that counts alias expansions (the billion-laughs guard), and a map from field path to line and column.

Every step's cost is bounded by the limits below before it starts. A first pass over the parser's events (libyaml's,
where PyYAML has it: a tenth of the pure-Python parser's time) counts values, depth and scalar lengths and stops at
the first excess, so nothing is composed from a file over a limit. Scalars are converted here, never by PyYAML's
constructors, which raise on `!!int abc` and take quadratic time on YAML 1.1's base-60 numbers (`1:1:1:...`).
docs/scenario-format.md ("Safety and limits") lists the limits, docs/security.md what they cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from mcp_hazard.errors import Problem, ScenarioError

MAX_FILE_BYTES = 1024 * 1024
"""3 times the largest file `generate dag` writes (about 345 KB); shipped scenarios are under 20 KB."""
MAX_NODES = 25_000
"""Values in the file, each alias expansion counted: twice the largest generated file's (about 11,600). Checking a
schema costs about 0.1 ms per value (jsonschema's metaschema check), so this also bounds the slowest load."""
MAX_DEPTH = 64
MAX_SCALAR_CHARS = 64 * 1024
"""Characters in one scalar (a key or a value): the longest in generated files is a prompt of about 3,700."""
MAX_SAFE_INTEGER = 2**53 - 1
"""Integers beyond this are not carried exactly by JSON numbers in most clients (RFC 8259, section 6)."""

_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {
    _STR,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
}
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_BOOLS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}  # YAML 1.1, as PyYAML
_FAST: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DIGITS = {2: frozenset("01"), 8: frozenset("01234567"), 10: frozenset("0123456789"),
           16: frozenset("0123456789abcdefABCDEF")}  # fmt: skip

Path = tuple[str | int, ...]


@dataclass
class Positions:
    """Line/column (1-based) of each value and each mapping key, by field path."""

    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def locate(self, path: Path, *, prefer_key: bool = False) -> tuple[int, int] | None:
        """The most precise known position for `path`, walking up to the nearest ancestor that has one."""
        probe = tuple(path)
        while True:
            if prefer_key and probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
            if probe in self.keys:
                return self.keys[probe]
            if not probe:
                return None
            probe = probe[:-1]


class _Refused(ValueError):
    """A scalar that is not a JSON value; the message is one line for the user."""


def _quote(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _integer(text: str) -> int:
    """An integer as YAML 1.1 writes it (sign, `_`, `0b`, `0x`, leading-0 octal), within JSON's exact range."""
    value = text.replace("_", "")
    sign = -1 if value.startswith("-") else 1
    value = value[1:] if value[:1] in "+-" else value
    if ":" in value:
        raise _Refused(f"{_quote(text)} is a base-60 number in YAML 1.1; quote it if you mean text")
    base, digits = (2, value[2:]) if value.startswith("0b") else (16, value[2:]) if value.startswith("0x") else (
        (8, value[1:]) if value.startswith("0") and len(value) > 1 else (10, value))  # fmt: skip
    if not digits or any(c not in _DIGITS[base] for c in digits):
        raise _Refused(f"{_quote(text)} is not an integer")
    # more digits than any 53-bit number needs, in any base, is out of range: never converted (int() of thousands
    # of digits is slow, and past 4,300 decimal digits it raises)
    number = sign * int(digits, base) if len(digits.lstrip("0")) <= 53 else MAX_SAFE_INTEGER + 1
    if abs(number) > MAX_SAFE_INTEGER:
        raise _Refused(
            f"{_quote(text)} is outside the integers JSON carries exactly (at most {MAX_SAFE_INTEGER} either way); "
            "quote it if you mean text"
        )
    return number


def _float(text: str) -> float:
    value = text.replace("_", "").lower()
    if ":" in value:
        raise _Refused(f"{_quote(text)} is a base-60 number in YAML 1.1; quote it if you mean text")
    if value.endswith((".inf", ".nan")):
        raise _Refused(f"{_quote(text)} is not a valid JSON number")
    try:
        number = float(value)
    except ValueError:
        raise _Refused(f"{_quote(text)} is not a number") from None
    if not math.isfinite(number):
        raise _Refused(f"{_quote(text)} is not a valid JSON number")
    return number


def _scalar(node: yaml.ScalarNode) -> Any:
    """The JSON value of a plain-tagged scalar; _Refused with one line when there is none."""
    tag, text = node.tag, node.value
    if tag in (_STR, "tag:yaml.org,2002:timestamp"):
        return text  # dates stay text: results must be JSON
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        if text.lower() not in _BOOLS:
            raise _Refused(f"{_quote(text)} is not a boolean")
        return _BOOLS[text.lower()]
    if tag == "tag:yaml.org,2002:int":
        return _integer(text)
    return _float(text)


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.positions = Positions()
        self.nodes = 0

    def fail(self, node: yaml.Node, path: Path, message: str) -> ScenarioError:
        mark = node.start_mark
        return ScenarioError([Problem(self.file, mark.line + 1, mark.column + 1, format_path(path), message)])

    def build(self, node: yaml.Node, path: Path, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(node, path, f"document expands to more than {MAX_NODES} values (alias expansion limit)")
        if depth > MAX_DEPTH:
            raise self.fail(node, path, f"nesting deeper than {MAX_DEPTH} levels")
        self.positions.values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in _SCALAR_TAGS:
                raise self.fail(node, path, f"tag {node.tag!r} is not allowed (only plain YAML values)")
            try:
                return _scalar(node)
            except _Refused as exc:
                raise self.fail(node, path, str(exc)) from None
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                raise self.fail(node, path, f"tag {node.tag!r} is not allowed (only plain YAML values)")
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP:
                raise self.fail(node, path, f"tag {node.tag!r} is not allowed (only plain YAML values)")
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise self.fail(key_node, path, "merge keys ('<<') are not supported; write the fields out")
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                    raise self.fail(key_node, path, "mapping keys must be plain scalars")
                try:
                    key = key_node.value if key_node.tag == _STR else str(_scalar(key_node))
                except _Refused as exc:
                    raise self.fail(key_node, path, f"key {exc}") from None
                child = (*path, key)
                if key in result:
                    raise self.fail(key_node, child, f"duplicate key {key!r}")
                self.positions.keys[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                result[key] = self.build(value_node, child, depth + 1)
            return result
        raise self.fail(node, path, "unsupported YAML node")


def format_path(path: Path) -> str:
    """`tasks[0].golden_path.steps[2].tool`: the field path as a user would write it."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_yaml(text: str, file: str) -> tuple[Any, Positions]:
    """Parse one YAML document from `text` into JSON-like data plus positions; raise ScenarioError on any problem."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_FILE_BYTES:
        raise ScenarioError([Problem(file, None, None, "", f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")])
    try:
        _measure(text, file, _FAST)
        root = yaml.compose(text, Loader=_FAST)
    except (yaml.YAMLError, UnicodeError) as fast:
        try:  # PyYAML's own parser words its errors better (it names the character, the alias); bounded the same
            _measure(text, file, yaml.SafeLoader)
            yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            raise _invalid(exc, text, file) from None
        raise _invalid(fast, text, file) from None
    if root is None:
        raise ScenarioError([Problem(file, 1, 1, "", "file is empty")])
    builder = _Builder(file)
    try:
        data = builder.build(root, (), 0)
    except RecursionError:
        raise ScenarioError([Problem(file, None, None, "", f"nesting deeper than {MAX_DEPTH} levels")]) from None
    return data, builder.positions


class _Open:
    """A collection the event pass is inside: its place in the parent, and what comes next in it."""

    __slots__ = ("at", "index", "key", "key_next", "mapping")

    def __init__(self, at: str | int | None, mapping: bool) -> None:
        self.at, self.mapping, self.key_next, self.key, self.index = at, mapping, mapping, "?", 0


def _measure(text: str, file: str, loader: Any) -> None:
    """One pass over the parser's events: ScenarioError at the first value past MAX_NODES, the first level past
    MAX_DEPTH or the first scalar over MAX_SCALAR_CHARS (alias expansions are the builder's to count); YAMLError
    where the text is not YAML. Keeps nothing but the open collections."""
    stack: list[_Open] = []
    values = 0

    def problem(mark: Any, at: str | int | None, message: str) -> ScenarioError:
        where = [frame.at for frame in stack[1:] if frame.at is not None] + ([] if at is None else [at])
        return ScenarioError([Problem(file, mark.line + 1, mark.column + 1, format_path(tuple(where)), message)])

    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionEndEvent):
            stack.pop()
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        parent = stack[-1] if stack else None
        length = len(event.value) if isinstance(event, yaml.ScalarEvent) else 0
        if parent is not None and parent.key_next:  # a mapping key: bounded by its value, not counted
            parent.key_next = False
            parent.key = event.value if isinstance(event, yaml.ScalarEvent) else "?"
            if length > MAX_SCALAR_CHARS:
                raise problem(event.start_mark, None, f"a key of {length} characters; the limit is {MAX_SCALAR_CHARS}")
            if isinstance(event, yaml.CollectionStartEvent):
                stack.append(_Open("?", isinstance(event, yaml.MappingStartEvent)))
            continue
        at: str | int | None = None
        if parent is not None:
            at, parent.key_next = (parent.key, True) if parent.mapping else (parent.index, False)
            parent.index += 1
        values += 1
        if values > MAX_NODES:
            limit = MAX_NODES
            raise problem(event.start_mark, at, f"the file holds more than {limit} values; the limit is {limit}")
        if len(stack) > MAX_DEPTH:
            raise problem(event.start_mark, at, f"nesting deeper than {MAX_DEPTH} levels")
        if length > MAX_SCALAR_CHARS:
            raise problem(event.start_mark, at, f"a value of {length} characters; the limit is {MAX_SCALAR_CHARS}")
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append(_Open(at, isinstance(event, yaml.MappingStartEvent)))


def _invalid(exc: Exception, text: str, file: str) -> ScenarioError:
    """One line for text that is not YAML, at the error's line and column."""
    line = col = None
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        reason = " ".join(part for part in (exc.context, exc.problem) if part)
    elif isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
        before = text[: exc.position]
        line, col = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        reason = f"character U+{exc.character:04X} is not allowed in YAML text"
    else:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ScenarioError([Problem(file, line, col, "", f"invalid YAML: {reason}")])

"""`$ref` in schemas written by strangers: references inside the same schema only, and a validator that never
fetches anything.

jsonschema resolves a `$ref` it does not hold by asking its registry to retrieve it, and the registry it uses by
default opens the URL with urllib, `file://` included. A scenario could then read a local file into an argument
error the agent sees (`does not satisfy const '<the file's content>'`), or stall every episode on a slow server, at
every call. Three guards:

- `NO_RETRIEVAL` is the registry every validator is built with (arguments.py). Its retrieve refuses, so even a schema
  that was never checked here (an upstream server's, in proxy mode) cannot make us read a file or open a connection:
  such a `$ref` is unresolvable and the call gets a one-line error.
- `ref_problems` checks a scenario's schemas at load: a `$ref` (or `$dynamicRef`) is `#` or a JSON pointer `#/...`
  that points at a subschema of the same schema; `$id` appears only at the top (below it, it would change what `#`
  means); no cycle of references meets the same value again without looking inside it (`$defs: {a: {$ref:
  '#/$defs/a'}}` recurses until Python's stack runs out); and references never make one value meet more than
  `MAX_SUBSCHEMAS_PER_VALUE` subschemas (`a: {allOf: [{$ref: b}, {$ref: b}]}`, eight levels deep, passes it).
- `RefBudget` bounds the references one check may follow (`MAX_REF_STEPS`), for schemas `ref_problems` never saw.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.exceptions import NoSuchResource

Where = tuple[str | int, ...]

MAX_SUBSCHEMAS_PER_VALUE = 1000
"""Subschemas one value may meet through references (every path counted: `anyOf` of two refs to a schema holding
`allOf` of two refs meets 1 + 2 + 2 x 2 of them). Generated schemas with unions of many models stay well below."""
MAX_REF_STEPS = 20_000
"""References one check of one value may follow, whatever the schema: a guard for schemas no load checked."""
LEVELS = 33
"""Value depths the load-time count looks at: arguments nest at most 32 levels (arguments.MAX_NESTING_DEPTH)."""


def _refuse(uri: str) -> Any:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class: its stub lacks the field


NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]
"""jsonschema adds the metaschemas it bundles; nothing else is ever looked up."""

# Where subschemas sit (draft 2020-12). In place: applied to the value itself; below: to its items, properties or keys.
_IN_PLACE_ONE = ("not", "if")
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_OBJECT_EACH = ("properties",)  # one of these per property name
_OBJECT_ALL = ("additionalProperties", "unevaluatedProperties")
_ARRAY_ALL = ("items", "contains", "unevaluatedItems")
_UNAPPLIED_ONE = ("contentSchema", "additionalItems")  # annotations only in 2020-12, but schemas a ref may name
_UNAPPLIED_MAPS = ("$defs", "definitions")
_REFS = ("$ref", "$dynamicRef")
LOCAL_ONLY = "only local refs are allowed ('#' or a JSON pointer into the same schema, such as '#/$defs/name')"


class _Node:
    """One subschema: where it is and what it applies (paths of other subschemas)."""

    __slots__ = ("arrays_all", "arrays_each", "in_place", "keys", "objects_all", "objects_each")

    def __init__(self) -> None:
        self.in_place: list[tuple[Where, Where | None]] = []  # (subschema, the $ref's own path when a ref)
        self.objects_each: list[Where] = []
        self.objects_all: list[Where] = []
        self.keys: list[Where] = []
        self.arrays_each: list[Where] = []
        self.arrays_all: list[Where] = []


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _subschemas(where: Where, node: dict[str, Any]) -> Iterator[tuple[str, Where, Any]]:
    """(keyword, path, subschema) for every subschema position of `node`."""
    for key, value in node.items():
        if key in (*_IN_PLACE_ONE, "then", "else", *_OBJECT_ALL, "propertyNames", *_ARRAY_ALL, *_UNAPPLIED_ONE):
            yield key, (*where, key), value
        elif key in (*_IN_PLACE_LISTS, "prefixItems") and isinstance(value, list):
            yield from ((key, (*where, key, i), sub) for i, sub in enumerate(value))
        elif key in (*_OBJECT_EACH, "patternProperties", "dependentSchemas", *_UNAPPLIED_MAPS) and isinstance(
            value, dict
        ):
            yield from ((key, (*where, key, name), sub) for name, sub in value.items())


def _pointer(schema: Any, ref: str) -> tuple[Where | None, str | None]:
    """The path `ref` names inside `schema` as referencing would resolve it, or None and why not."""
    if not ref.startswith("#"):
        return None, f"$ref {_short(ref)!r}: {LOCAL_ONLY}; nothing is ever fetched"
    fragment = ref[1:]
    if not fragment:
        return (), None
    if not fragment.startswith("/"):
        return None, f"$ref {_short(ref)!r} names an anchor; {LOCAL_ONLY}"
    node: Any = schema
    path: list[str | int] = []
    for segment in unquote(fragment[1:]).split("/"):  # as referencing splits it
        if isinstance(node, list) and segment.isascii() and segment.isdigit() and str(int(segment)) == segment:
            index = int(segment)
            if index >= len(node):
                return None, f"$ref {_short(ref)!r} points to nothing in this schema"
            node, path = node[index], [*path, index]
        elif isinstance(node, dict):
            key = segment.replace("~1", "/").replace("~0", "~")
            if key not in node:
                return None, f"$ref {_short(ref)!r} points to nothing in this schema"
            node, path = node[key], [*path, key]
        else:
            return None, f"$ref {_short(ref)!r} points to nothing in this schema"
    return tuple(path), None


def ref_problems(schema: Any) -> list[tuple[Where, str]]:
    """What is wrong with the references of a valid draft 2020-12 `schema`: (path inside the schema, one line).
    Iterative throughout, so a deep schema cannot exhaust the stack."""
    nodes: dict[Where, _Node] = {}
    problems: list[tuple[Where, str]] = []
    refs: list[tuple[Where, Where, str]] = []  # (subschema, $ref's path, ref)
    stack: list[tuple[Where, Any]] = [((), schema)]
    while stack:
        where, sub = stack.pop()
        if where in nodes or not isinstance(sub, dict | bool):
            continue
        node = nodes[where] = _Node()
        if not isinstance(sub, dict):
            continue
        if where and "$id" in sub:
            problems.append(((*where, "$id"), "$id is allowed only at the top of a schema: below, it would change "
                                              "what local refs point to"))  # fmt: skip
        for keyword in _REFS:
            if isinstance(sub.get(keyword), str):
                refs.append((where, (*where, keyword), sub[keyword]))
        for keyword, path, value in _subschemas(where, sub):
            stack.append((path, value))
            _link(node, keyword, path, sub)
    for where, ref_path, ref in refs:
        target, problem = _pointer(schema, ref)
        if target is None:
            problems.append((ref_path, problem or LOCAL_ONLY))
        elif target not in nodes:
            problems.append((ref_path, f"$ref {_short(ref)!r} points to a value that is not a subschema"))
        else:
            nodes[where].in_place.append((target, ref_path))
    if problems or not refs:
        return problems
    cycle = _cycle(nodes)
    if cycle is not None:
        return [cycle]
    return _fan_out(nodes)


def _link(node: _Node, keyword: str, path: Where, parent: dict[str, Any]) -> None:
    applied_here = keyword in (*_IN_PLACE_ONE, *_IN_PLACE_LISTS, "dependentSchemas")
    if applied_here or (keyword in ("then", "else") and "if" in parent):  # without `if`, then/else are ignored
        node.in_place.append((path, None))
    elif keyword in _OBJECT_EACH:
        node.objects_each.append(path)
    elif keyword in _OBJECT_ALL or keyword == "patternProperties":
        node.objects_all.append(path)
    elif keyword == "propertyNames":
        node.keys.append(path)
    elif keyword == "prefixItems":
        node.arrays_each.append(path)
    elif keyword in _ARRAY_ALL:
        node.arrays_all.append(path)


def _pointer_text(where: Where) -> str:
    return "#" + "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in where)


def _cycle(nodes: dict[Where, _Node]) -> tuple[Where, str] | None:
    """A cycle of in-place references (the same value checked again, forever), as (a $ref on it, message)."""
    state: dict[Where, int] = {}  # 1 on the current path, 2 done
    for start in nodes:
        if start in state:
            continue
        path: list[tuple[Where, Iterator[tuple[Where, Where | None]]]] = [(start, iter(nodes[start].in_place))]
        edges: list[Where | None] = []
        state[start] = 1
        while path:
            where, children = path[-1]
            step = next(children, None)
            if step is None:
                state[where] = 2
                path.pop()
                if edges:
                    edges.pop()
                continue
            child, ref_path = step
            if state.get(child) == 1:
                on_cycle = [w for w, _ in path][[w for w, _ in path].index(child) :]
                refs = [edge for edge in edges[len(edges) - len(on_cycle) + 1 :] if edge is not None]
                at = refs[0] if refs else ref_path
                loop = " -> ".join(_pointer_text(w) for w in (*on_cycle, child))
                return at or child, (
                    f"$ref cycle {_short(loop, 160)}: checks the same value again and again without looking inside it"
                )
            if child not in state:
                state[child] = 1
                edges.append(ref_path)
                path.append((child, iter(nodes[child].in_place)))
    return None


def _order(nodes: dict[Where, _Node]) -> list[Where]:
    """Subschemas with every in-place subschema before the one that applies it (the in-place graph has no cycle)."""
    done: set[Where] = set()
    order: list[Where] = []
    for start in nodes:
        stack: list[tuple[Where, bool]] = [(start, False)]
        while stack:
            where, expanded = stack.pop()
            if expanded:
                order.append(where)
                continue
            if where in done:
                continue
            done.add(where)
            stack.append((where, True))
            stack.extend((child, False) for child, _ in nodes[where].in_place if child not in done)
    return order


def _fan_out(nodes: dict[Where, _Node]) -> list[tuple[Where, str]]:
    """How many subschemas one value at each depth may meet, counting every path through references; a problem
    when that passes the limit. f[k][s]: subschemas a value k levels below one checked against `s` meets (at most:
    for an object, the most any one property name collects, plus what applies to every property)."""
    order = _order(nodes)
    cap = MAX_SUBSCHEMAS_PER_VALUE + 1
    previous: dict[Where, int] = {}
    seen: set[tuple[int, ...]] = set()
    for depth in range(LEVELS + 1):
        current: dict[Where, int] = {}
        for where in order:
            node = nodes[where]
            if depth == 0:
                total = 1
            else:
                objects = max((previous[p] for p in node.objects_each), default=0)
                objects += sum(previous[p] for p in node.objects_all)
                arrays = max((previous[p] for p in node.arrays_each), default=0)
                arrays += sum(previous[p] for p in node.arrays_all)
                total = max(objects, arrays, sum(previous[p] for p in node.keys))
            total += sum(current[child] for child, _ in node.in_place)
            current[where] = min(total, cap)
        if current[()] >= cap:
            which = "the value itself" if depth == 0 else f"a value {depth} level{'s' if depth > 1 else ''} down"
            limit = MAX_SUBSCHEMAS_PER_VALUE
            return [((), f"refs make {which} meet more than {limit} subschemas; the limit is {limit} (a ref used "
                         "twice in allOf/anyOf/oneOf doubles the work)")]  # fmt: skip
        state = tuple(current.values())
        if not any(state) or state in seen:  # nothing deeper, or a repeat: deeper levels repeat what was counted
            break
        seen.add(state)
        previous = current
    return []


# -- the guard at call time --------------------------------------------------------------------------------------------


class RefsTooCostly(Exception):
    """A check followed more references than `MAX_REF_STEPS`, or nested them deeper than the stack allows."""


class RefBudget(threading.local):
    """References followed by the check running in this thread. Counted only between `start` and `stop`
    (arguments.argument_problem, the one place the package checks values), so a validator used on its own is never
    refused for steps another check took."""

    steps = 0
    active = False

    def start(self) -> None:
        self.steps, self.active = 0, True

    def stop(self) -> None:
        self.active = False


BUDGET = RefBudget()
_FOLLOW = {keyword: Draft202012Validator.VALIDATORS[keyword] for keyword in _REFS}


def _counted(keyword: str) -> Any:
    follow = _FOLLOW[keyword]

    def counted(validator: Any, ref: Any, instance: Any, schema: Any) -> Any:
        BUDGET.steps += 1
        if BUDGET.steps > MAX_REF_STEPS and BUDGET.active:
            raise RefsTooCostly(f"checking it follows more than {MAX_REF_STEPS} schema references")
        yield from follow(validator, ref, instance, schema)

    return counted


COUNTED_REFS = {keyword: _counted(keyword) for keyword in _REFS}
"""`$ref` and `$dynamicRef` as jsonschema follows them, each step counted against the budget."""

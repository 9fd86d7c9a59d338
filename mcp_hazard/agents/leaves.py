"""Where values go in a call: the leaves of an input schema (nested objects included), the schema seen as one flat
object of them, and flat values put back into the documented shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Leaf:
    """One place a value goes in a call: a property that is not itself an object of properties, by its path."""

    path: tuple[str, ...]
    prop: dict[str, Any]
    required: bool


def leaves(schema: dict[str, Any], arguments: dict[str, Any] | None = None) -> list[Leaf]:
    """Every place a value goes, in documented order, descending into objects of properties: one `request` object
    (replace) or several nested ones (`lane.from`, `parcel.size_cm.length`). An object property is kept whole
    when the plan itself passes an object under that name. A place is required when it and every object above it
    are required."""
    planned_objects = {k for k, v in (arguments or {}).items() if isinstance(v, dict)}
    out: list[Leaf] = []

    def walk(node: dict[str, Any], prefix: tuple[str, ...], required: bool) -> None:
        props = node.get("properties")
        wanted = set(node.get("required") or [])
        for name, prop in props.items() if isinstance(props, dict) else ():
            prop = prop if isinstance(prop, dict) else {}
            path, needed = (*prefix, name), required and name in wanted
            inner = prop.get("properties")
            if prop.get("type") == "object" and isinstance(inner, dict) and inner and name not in planned_objects:
                walk(prop, path, needed)
            else:
                out.append(Leaf(path, prop, needed))

    walk(schema, (), True)
    return out


def flat_view(
    schema: dict[str, Any], arguments: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Leaf]]:
    """The input schema seen as one flat object of its leaves, for placing planned arguments, and each flat name's
    leaf. A leaf keeps its own name (the path when two leaves share it); the names of the objects above it are
    added to its description, so `size_cm` still tells `length` is in cm."""
    found = leaves(schema, arguments)
    counts: dict[str, int] = {}
    for leaf in found:
        counts[leaf.path[-1]] = counts.get(leaf.path[-1], 0) + 1
    props: dict[str, Any] = {}
    by_name: dict[str, Leaf] = {}
    for leaf in found:
        name = leaf.path[-1] if counts[leaf.path[-1]] == 1 else ".".join(leaf.path)
        prop = dict(leaf.prop)
        if len(leaf.path) > 1:
            prop["description"] = " ".join([str(prop.get("description", "")), *leaf.path[:-1]]).strip()
        props[name] = prop
        by_name[name] = leaf
    required = [name for name, leaf in by_name.items() if leaf.required]
    return {"type": "object", "properties": props, "required": required}, by_name


def put(arguments: dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set `value` at `path` in `arguments`, creating the objects on the way."""
    *parents, last = path
    node = arguments
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[last] = value


def nest(values: dict[str, Any], by_name: dict[str, Leaf]) -> dict[str, Any]:
    """Flat values back into the documented shape: each value at its leaf's path (unknown names stay on top)."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        leaf = by_name.get(name)
        put(out, leaf.path if leaf is not None else (name,), value)
    return out

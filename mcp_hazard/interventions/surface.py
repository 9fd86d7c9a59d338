"""Interface interventions: a tool's surface changes, its behaviour does not.

Each intervention turns the listing (a list of `Surface`) into a new one and keeps, per tool, the way back: the
served name to the name below, and the served arguments to the arguments below (`to_inner`), plus the way out
(`to_outer`) so tests can prove that the mapped call returns exactly what the original returns. Interventions apply
from the first listing (desktop clients do not refresh) and compose in the order given.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from mcp_hazard.scenario.models import Scenario

Mapper = Callable[[dict[str, Any]], dict[str, Any]]


def _same(args: dict[str, Any]) -> dict[str, Any]:
    return dict(args)


@dataclass
class Surface:
    """A tool as the agent sees it, and how its calls map to the layer below (the hazard view)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    inner: str  # the name of this tool in the hazard view below every intervention
    to_inner: Mapper = _same
    to_outer: Mapper = _same
    notes: dict[str, Any] = field(default_factory=dict)

    def derive(self, **changes: Any) -> Surface:
        return replace(self, **changes)

    def then(self, to_inner: Mapper, to_outer: Mapper) -> tuple[Mapper, Mapper]:
        """Compose a new outer layer's mappings with this surface's (outer -> this -> inner)."""
        below_in, below_out = self.to_inner, self.to_outer
        return (lambda args: below_in(to_inner(args))), (lambda args: to_outer(below_out(args)))


def properties(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties")
    return dict(props) if isinstance(props, dict) else {}


def renamed_schema(schema: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    new = copy.deepcopy(schema)
    new["properties"] = {names.get(k, k): v for k, v in properties(schema).items()}
    if isinstance(schema.get("required"), list):
        new["required"] = [names.get(r, r) for r in schema["required"]]
    return new


_WRITTEN = re.compile(r"Arguments, in order: [^.]*\.|Always pass [A-Za-z0-9_]+=")


def rename_in_text(text: str, names: dict[str, str]) -> str:
    """Argument names an intervention wrote into a description (reorder's order, augment's constant) follow a later
    rename; the scenario's own prose is left alone."""

    def swap(match: re.Match[str]) -> str:
        part = match.group(0)
        for old, new in names.items():
            part = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(old)}(?![A-Za-z0-9_])", new, part)
        return part

    return _WRITTEN.sub(swap, text)


_PROBE = object()


def _path_to(node: Any, target: object, prefix: str = "") -> str | None:
    if node is target:
        return prefix or None
    if isinstance(node, dict):
        for key, value in node.items():
            found = _path_to(value, target, f"{prefix}.{key}" if prefix else str(key))
            if found is not None:
                return found
    return None


def served_paths(surface: Surface, names: list[str]) -> dict[str, str]:
    """Where each argument name below the interventions sits in the served arguments (dotted), for the names that
    moved: found by sending a marker through the surface's own way out, so it holds for any composition."""
    out = {}
    for name in names:
        path = _path_to(surface.to_outer({name: _PROBE}), _PROBE)
        if path is not None and path != name:
            out[name] = path
    return out


def in_served_terms(text: str, paths: dict[str, str]) -> str:
    """A message from below (a hazard's rejection or hint) with argument names as the agent knows them: `'name'`
    and `name=` are rewritten; other prose is left alone."""
    if not paths:
        return text
    names = "|".join(re.escape(name) for name in sorted(paths, key=len, reverse=True))
    quoted = re.compile(rf"'({names})'")
    assigned = re.compile(rf"(?<![A-Za-z0-9_.])({names})=")
    text = quoted.sub(lambda m: f"'{paths[m.group(1)]}'", text)
    return assigned.sub(lambda m: f"{paths[m.group(1)]}=", text)


def flat_properties(schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The properties that take the arguments: those of the one nested request object when that is the shape."""
    props = properties(schema)
    if len(props) == 1:
        ((key, only),) = props.items()
        if isinstance(only, dict) and only.get("type") == "object" and isinstance(only.get("properties"), dict):
            return dict(only["properties"]), key
    return props, None


def rename_args(names: dict[str, str]) -> tuple[Mapper, Mapper]:
    """(outer -> inner, inner -> outer) for argument names mapped inner -> outer by `names`."""
    back = {outer: inner for inner, outer in names.items()}
    return (lambda a: {back.get(k, k): v for k, v in a.items()}), (lambda a: {names.get(k, k): v for k, v in a.items()})


class Intervention:
    kind: ClassVar[str]
    summary: ClassVar[str]

    def __init__(self, seed: int, scenario: str, task: str, originals: set[str]) -> None:
        self.seed = seed
        self.scenario = scenario
        self.task = task
        self.originals = originals  # every original tool and argument name: never reused as a new name

    def bind(self, scenario: Scenario) -> None:
        """Read what the scenario declares for this intervention (replace: the tools' declared replacements)."""

    def keys(self, *more: object) -> tuple[object, ...]:
        return (self.seed, self.scenario, self.task, self.kind, *more)

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        raise NotImplementedError


REGISTRY: dict[str, type[Intervention]] = {}


def register(cls: type[Intervention]) -> type[Intervention]:
    REGISTRY[cls.kind] = cls
    return cls

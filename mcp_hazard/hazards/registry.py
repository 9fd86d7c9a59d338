"""The hazard kinds, discovered through the `mcp_hazard.hazards` entry point group.

A kind is one class in one module, named in a package's metadata as `KIND = "package.module:Class"`; ours are
registered there too (pyproject.toml), so a kind from another package is found the same way, with no edit of ours.
Kinds load on first use, so a command that never asks for one imports none. A broken kind (a module that does not
import, a name that is not a `Hazard`, a name another package took) is a one-line error naming the entry point and
its package.

An editable install keeps the entry points it had when it was made: after a kind is added to pyproject.toml, run
`pip install -e .` again. Until then our own kinds are found in this package's modules (`own_kinds`, which a test keeps
equal to pyproject.toml), so a stale install still has every kind of this version.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from mcp_hazard.errors import UserError

GROUP = "mcp_hazard.hazards"
OWN_DISTRIBUTION = "mcp-hazard"
PACKAGE = "mcp_hazard.hazards"


def _distribution(entry: EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return str(dist.name) if dist is not None else "an unknown package"


def _own(distribution: str) -> bool:
    return distribution.replace("_", "-").lower() == OWN_DISTRIBUTION


def own_kinds(base: type) -> dict[str, str]:
    """Our kinds as `module:Class` by name, found in this package's modules: what pyproject.toml registers (a test
    keeps the two equal), and what a stale install without the entry points falls back to."""
    found = {}
    package = import_module(PACKAGE)
    for info in pkgutil.iter_modules(package.__path__):
        module = import_module(f"{PACKAGE}.{info.name}")
        for name, value in vars(module).items():
            own = isinstance(value, type) and issubclass(value, base) and value.__module__ == module.__name__
            if own and "kind" in vars(value):
                found[value.kind] = f"{module.__name__}:{name}"
    return dict(sorted(found.items()))


def _load(value: str) -> Any:
    """`module:Class` -> the class, as EntryPoint.load does."""
    module, _, attribute = value.partition(":")
    return getattr(import_module(module), attribute)


def discover(base: type, check: Callable[[type], str | None] = lambda cls: None) -> dict[str, type]:
    """Every kind of the group, by name; each must be a subclass of `base` whose `kind` is its entry point's name,
    and pass `check` (None, or why not)."""
    found: dict[str, type] = {}
    owners: dict[str, str] = {}
    entries = [(e.name, e.value, _distribution(e), e.load) for e in entry_points(group=GROUP)]
    if not any(_own(dist) for _name, _value, dist, _loader in entries):  # an install older than the group
        entries += [(name, value, OWN_DISTRIBUTION, partial(_load, value)) for name, value in own_kinds(base).items()]
    for name, value, dist, loader in sorted(entries, key=lambda e: (not _own(e[2]), e[0], e[2])):
        where = f"hazard kind {name!r} (entry point {name} = {value!r} of package {dist}, group {GROUP})"
        try:
            cls = loader()
        except Exception as exc:  # any failure of a third party's import is that package's, said in one line
            detail = str(exc).splitlines()[0] if str(exc) else ""
            raise UserError(f"{where}: cannot be loaded: {type(exc).__name__}: {detail}".rstrip(": ")) from None
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise UserError(f"{where}: {value} is a {type(cls).__name__}, not a subclass of {base.__name__}")
        if getattr(cls, "kind", None) != name:
            raise UserError(f"{where}: the class says kind = {getattr(cls, 'kind', None)!r}; the two must be equal")
        problem = check(cls)
        if problem is not None:
            raise UserError(f"{where}: {problem}")
        if name in found:
            if found[name] is cls:
                continue
            raise UserError(f"{where}: the name is taken by package {owners[name]}; choose another kind name")
        found[name] = cls
        owners[name] = dist
    return found


class KindRegistry(Mapping[str, Any]):
    """Kind name -> class, read-only, filled from the entry points on first use (`reload` forgets them)."""

    def __init__(self, base: type, check: Callable[[type], str | None] = lambda cls: None) -> None:
        self._base = base
        self._check = check
        self._kinds: dict[str, type] | None = None

    def _loaded(self) -> dict[str, type]:
        if self._kinds is None:
            self._kinds = discover(self._base, self._check)
        return self._kinds

    def reload(self) -> None:
        self._kinds = None

    def __getitem__(self, name: str) -> Any:
        return self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

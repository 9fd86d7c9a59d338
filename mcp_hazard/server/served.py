"""The interface an episode serves: the hazard views with every interface intervention on top, and the served names
of the arguments below, for messages that come from below (a hazard's rejection or hint)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any

import mcp_types as types

from mcp_hazard.hazards import ToolView
from mcp_hazard.interventions import Intervention, Surface, apply_all
from mcp_hazard.interventions.surface import properties, served_paths
from mcp_hazard.scenario.models import ToolSpec


class ServedInterface:
    def __init__(self, interventions: list[Intervention], tools: dict[str, ToolSpec], changing: set[str]) -> None:
        self.interventions = interventions
        self.tools = tools
        self.changing = changing  # tools a hazard may change the interface of
        self._cache: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[Surface]]] = {}
        self._last: dict[bool, tuple[list[ToolView], list[Surface]]] = {}

    def surfaces(self, views: list[ToolView], *, accepting: bool = False) -> list[Surface]:
        """The listing as served for these views.

        `accepting=True` starts from what each tool accepts instead of what it lists (they differ under an
        invocation error), so the served form of an undocumented shape is known and can be let through.

        This runs for every call, so the result is kept for the same list of views (the engine hands out one list
        until a hazard changes it) and, with interventions, for views that are the same objects as last time
        (schemas are shared, not copied: hazards/base.py). Callers must not change what they get."""
        last = self._last.get(accepting)
        if last is not None and last[0] is views:
            return last[1]
        surfaces = self._applied(views, accepting)
        self._last[accepting] = (views, surfaces)
        return surfaces

    def _applied(self, views: list[ToolView], accepting: bool) -> list[Surface]:
        if not self.interventions:
            return self._base(views, accepting)
        below = tuple((v.input_schema, v.output_schema, v.accepts) for v in views)
        key = (accepting, tuple((v.name, v.description, v.original) for v in views))
        cached = self._cache.get(key)
        if cached is not None and all(a is b for old, new in zip(cached[0], below, strict=True)
                                      for a, b in zip(old, new, strict=True)):  # fmt: skip
            return cached[1]
        surfaces = apply_all(self.interventions, self._base(views, accepting))
        if len(self._cache) >= 8:
            self._cache.clear()
        self._cache[key] = (below, surfaces)
        return surfaces

    def _base(self, views: list[ToolView], accepting: bool) -> list[Surface]:
        return [
            Surface(name=v.name, description=v.description,
                    input_schema=v.accepts if accepting and v.accepts is not None else v.input_schema,
                    output_schema=v.output_schema, inner=v.name,
                    notes={"interface_hazard": True} if v.original in self.changing else {})
            for v in views
        ]  # fmt: skip

    def paths(self, spec: ToolSpec, view: ToolView, surface: Surface) -> dict[str, str]:
        """Argument names below -> where they sit in the served call: names as first served (a drift's error names
        the field it renamed), then as listed now, then the undocumented ones the tool accepts now."""
        listed = list(properties(view.input_schema))
        authored = next((s for s in self.surfaces([ToolView.of(t) for t in self.tools.values()])
                         if s.inner == spec.name), None)  # fmt: skip
        paths = served_paths(authored, list(properties(spec.input_schema))) if authored is not None else {}
        paths |= served_paths(surface, listed)
        accepting = surface.notes.get("accepting")
        if accepting is not None:
            paths |= served_paths(accepting, [n for n in properties(view.accepts or {}) if n not in listed])
        return paths


_SERVED_TOOLS: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], types.Tool]] = OrderedDict()
_SERVED_TOOLS_KEPT = 4096


def served_tool(spec: ToolSpec, surface: Surface) -> types.Tool:
    """A tool as listed. Every episode of a task lists the same tools, so one `types.Tool` serves them all while the
    spec and the served schemas are the same objects (the newest few thousand are kept; nobody edits them)."""
    anchors = (spec, surface.input_schema, surface.output_schema)
    key = (id(spec), surface.name, surface.description, id(surface.input_schema), id(surface.output_schema))
    cached = _SERVED_TOOLS.get(key)
    if cached is not None and all(map(operator.is_, cached[0], anchors)):
        _SERVED_TOOLS.move_to_end(key)
        return cached[1]
    annotations = None
    if spec.annotations is not None:
        annotations = types.ToolAnnotations(**spec.annotations.model_dump(exclude_none=True))
    tool = types.Tool(
        name=surface.name,
        title=spec.title,
        description=surface.description,
        input_schema=surface.input_schema,
        output_schema=surface.output_schema,
        annotations=annotations,
    )
    _SERVED_TOOLS[key] = (anchors, tool)
    if len(_SERVED_TOOLS) > _SERVED_TOOLS_KEPT:
        _SERVED_TOOLS.popitem(last=False)
    return tool

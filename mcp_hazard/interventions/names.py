"""Name policies for tool and argument names: random tokens, realistic words unrelated to the tool, and relations
between real entities that contradict a familiar cause-effect pair or relate nothing familiar. They separate an
agent's reading of descriptions from memorised names and relations; descriptions are kept."""

from __future__ import annotations

import re
from typing import ClassVar

from mcp_hazard.interventions.cause_effect import CAUSE_EFFECT, ENTITIES, familiar
from mcp_hazard.interventions.naming import REALISTIC, random_name, realistic_name
from mcp_hazard.interventions.surface import (
    Intervention,
    Surface,
    properties,
    register,
    rename_args,
    rename_in_text,
    renamed_schema,
)
from mcp_hazard.stable import choose


class _NamePolicy(Intervention):
    maker = staticmethod(random_name)

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        taken = set(self.originals) | {s.name for s in surfaces}
        out = []
        for surface in surfaces:
            own = set(re.split(r"[^a-z0-9]+", surface.inner.lower()))  # realistic, but unrelated to this tool
            local_taken = taken | {w for w in REALISTIC if w in own}
            tool = self.maker(local_taken, *self.keys(surface.inner))
            while own & set(tool.split("_")):
                tool = self.maker(local_taken, *self.keys(surface.inner, tool))
            taken.add(tool)
            local = set(self.originals)
            names = {p: self.maker(local, *self.keys(surface.inner, p)) for p in properties(surface.input_schema)}
            out.append(_renamed(surface, tool, names))
        return out


def _renamed(surface: Surface, tool: str, names: dict[str, str]) -> Surface:
    """`surface` served as `tool` with its arguments renamed by `names` (original -> served), and the way back."""
    inward, outward = rename_args(names)
    to_inner, to_outer = surface.then(inward, outward)
    description = rename_in_text(surface.description, names)
    return surface.derive(name=tool, input_schema=renamed_schema(surface.input_schema, names), to_inner=to_inner,
                          to_outer=to_outer, description=description)  # fmt: skip


@register
class RandomNames(_NamePolicy):
    kind = "names=random"
    summary = "Tool and argument names replaced by random tokens (t_vokeram); descriptions kept."
    maker = staticmethod(random_name)


@register
class RealisticNames(_NamePolicy):
    kind = "names=realistic"
    summary = "Tool and argument names replaced by realistic but unrelated words (harbor_ledger)."
    maker = staticmethod(realistic_name)


class _RelationNames(Intervention):
    """Each tool is named as a relation between two real entities, `{output}_from_{input}`, and its first argument
    takes the input entity's name; other arguments get other entities. `contradicting` picks a familiar cause-effect
    pair served the other way round (the tool computes the cause from its effect); `random-realistic` picks two
    entities with no familiar relation either way (paper 002's Tübingen and Random Tübingen benchmarks)."""

    contradict: ClassVar[bool]

    def _pair(self, tool: str, attempt: int) -> tuple[str, str]:
        if self.contradict:
            cause, effect = choose(CAUSE_EFFECT, *self.keys(tool, "pair", attempt))
            return cause, effect
        output = choose(ENTITIES, *self.keys(tool, "output", attempt))
        unrelated = [e for e in ENTITIES if e != output and not familiar(e, output)]
        return output, choose(unrelated, *self.keys(tool, "input", attempt))

    def apply(self, surfaces: list[Surface]) -> list[Surface]:
        taken = set(self.originals) | {s.name for s in surfaces}
        out = []
        for surface in surfaces:
            for attempt in range(1000):
                output, given = self._pair(surface.inner, attempt)
                tool = f"{output}_from_{given}" + (f"_{attempt}" if attempt >= len(CAUSE_EFFECT) else "")
                if tool not in taken:
                    break
            taken.add(tool)
            names = self._argument_names(surface, output, given)
            out.append(_renamed(surface, tool, names))
        return out

    def _argument_names(self, surface: Surface, output: str, given: str) -> dict[str, str]:
        """Each argument's name depends on the tool and the argument alone (a retry on a clash), and arguments the
        scenario declared are named before those a hazard introduced: so a tool that accepts a changed shape (an
        invocation error's renamed field) is served with the same names for the arguments it shares with the
        listing, and its error's advice names an argument the agent's next call can use."""
        props = list(properties(surface.input_schema))
        fixed = set(self.originals) | {given}
        others = [e for e in ENTITIES if e not in fixed and not familiar(e, output)]
        names: dict[str, str] = {}
        ordered = [p for p in props if p in self.originals] + [p for p in props if p not in self.originals]
        for prop in ordered:
            if prop == props[0] and prop in self.originals:
                names[prop] = given
                continue
            for attempt in range(len(others) + 1):
                pick = choose(others, *self.keys(surface.inner, prop, attempt)) if others else ""
                if pick and pick not in names.values():
                    break
            else:
                pick = f"{given}_{props.index(prop)}"
            names[prop] = pick
        return names


@register
class ContradictingNames(_RelationNames):
    kind = "names=contradicting"
    summary = ("Each tool named as a familiar cause computed from its effect (altitude_from_temperature), first "
               "argument the effect; descriptions kept.")  # fmt: skip
    contradict = True


@register
class RandomRealisticNames(_RelationNames):
    kind = "names=random-realistic"
    summary = ("Each tool named as a relation between real entities that no familiar pair links "
               "(cement_from_traffic); descriptions kept.")  # fmt: skip
    contradict = False

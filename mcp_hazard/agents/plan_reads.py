"""What a plan reads of a step's result: the top-level fields later steps and the answer name (`{{ s1.price_eur }}`),
and the whole paths into it (`{{ s1[3].amount }}` -> (3, 'amount')), which is what a re-reading must agree on and what
shape the result must have for the plan to read it."""

from __future__ import annotations

import ast
import re
from typing import Any

from mcp_hazard.agents.normalise import convert_field, snake
from mcp_hazard.agents.rereading import listed
from mcp_hazard.scenario.expressions import access_paths, template_expressions
from mcp_hazard.scenario.models import GoldenPath


def _accessed(plan: GoldenPath, index: int) -> list[list[Any]]:
    step_id = plan.steps[index].id
    templates: list[Any] = [s.arguments for s in plan.steps[index + 1 :]] + [plan.answer]
    found: list[list[Any]] = []
    for template in templates:
        for source in template_expressions(template):
            for path in access_paths(source, step_id):
                if path and path not in found:
                    found.append(path)
    return found


def expected_fields(plan: GoldenPath, index: int) -> list[str]:
    """Top-level fields of step `index`'s result that later steps or the answer read."""
    fields: list[str] = []
    for path in _accessed(plan, index):
        if isinstance(path[0], str) and path[0] not in fields:
            fields.append(path[0])
    return fields


def read_paths(plan: GoldenPath, index: int) -> list[list[Any]]:
    """Whole paths into step `index`'s result that later steps or the answer read."""
    return _accessed(plan, index)


def has_fields(value: Any, fields: list[str]) -> bool:
    """Whether a result holds every field the rest of the plan reads (under another name or unit, too)."""
    if not fields:
        return True
    return isinstance(value, dict) and all(convert_field(value, f) is not None for f in fields)


def as_read(value: Any, paths: list[list[Any]]) -> Any:
    """The result in the shape the plan reads it: a list the result wraps (`{"items": [...], "page": 1, ...}`) when
    the plan reads the result by position (`s1[3]`)."""
    if any(isinstance(path[0], int) for path in paths):
        return listed(value)
    return value


_KEY = re.compile(r"\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]|\.([A-Za-z_][A-Za-z0-9_]*)")
_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)


def _unaliased(key: str) -> str:
    """A key as normalise.unalias reads it: a display-like one (spaces, a unit, a capital first) as a field name."""
    return snake(key) if (" " in key or "(" in key or key[:1].isupper()) else key


def unaliased_keys(template: Any, every: bool = False) -> Any:
    """The template with each key it reads (`s1['City Hub']`, `s2.Miznon`) as the agent's reading of results names it
    (`s1['city_hub']`, `s2['miznon']`; normalise.unalias): a result keyed by display-like names (hotel names) is read
    back as field names, and the plan must read it the same way. `every`: every key as `snake` names it (`id_` ->
    `id`), for results read with `snaked` (a form whose keys were renamed and back loses what `snake` drops)."""
    if isinstance(template, str):

        def key(found: re.Match[str]) -> str:
            name = ast.literal_eval(found.group(1)) if found.group(1) else found.group(2)
            renamed = snake(name) if every else _unaliased(name)
            return found.group(0) if renamed == name else "[" + repr(renamed) + "]"

        return _EXPRESSION.sub(lambda part: "{{" + _KEY.sub(key, part.group(1)) + "}}", template)
    if isinstance(template, list):
        return [unaliased_keys(item, every) for item in template]
    if isinstance(template, dict):
        return {name: unaliased_keys(item, every) for name, item in template.items()}
    return template


def snaked(value: Any) -> Any:
    """`value` with every key as `snake` names it, at every depth."""
    if isinstance(value, dict):
        return {snake(str(key)): snaked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [snaked(item) for item in value]
    return value

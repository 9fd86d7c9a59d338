"""Declared replacements (`replacement:` on a tool): a sound one loads and maps arguments both ways; every unsound
one is reported at its place (file:line:column, field path) with what is wrong."""

from __future__ import annotations

import pytest

from mcp_hazard.load import parse_scenario
from mcp_hazard.scenario.replacement import to_original, to_replacement

from .test_load import FILE, assert_problem, at, edit, problems_of

ANCHOR = """      default: {error: "Unknown city {{ city }}"}
"""
REPLACEMENT = """    replacement:
      name: city_code
      description: Code of a place.
      input_schema:
        type: object
        properties:
          place:
            type: object
            properties:
              city: {type: string, description: Name of the city}
            required: [city]
            additionalProperties: false
        required: [place]
        additionalProperties: false
      arguments:
        city: place.city
"""


def declared(replacement: str = REPLACEMENT) -> str:
    return edit(ANCHOR, ANCHOR + replacement)


def test_a_sound_replacement_loads_and_maps_both_ways() -> None:
    scenario = parse_scenario(declared(), FILE)
    tool = scenario.tool("lookup")
    assert tool is not None and tool.replacement is not None
    replacement = tool.replacement
    assert to_replacement(replacement, {"city": "Velmora"}) == {"place": {"city": "Velmora"}}
    assert to_original(replacement, {"place": {"city": "Velmora"}}) == {"city": "Velmora"}
    assert to_original(replacement, {"place": "Velmora"}) == {}  # a wrong shape maps to nothing, never raises
    assert to_original(replacement, {}) == {}


@pytest.mark.parametrize(
    ("old", "new", "needle", "path", "words"),
    [
        (
            "      name: city_code\n",
            "      name: describe\n",
            "describe\n",
            "tools[0].replacement.name",
            ("already the name of a tool",),
        ),
        (
            "      name: city_code\n",
            "      name: submit_answer\n",
            "submit_answer",
            "tools[0].replacement.name",
            ("already the name",),
        ),
        (
            "        city: place.city\n",
            "        city: place.town\n",
            "place.town",
            "tools[0].replacement.arguments.city",
            ("no property 'town' at place",),
        ),
        (
            "        city: place.city\n",
            "        city: place.city\n        country: place.city\n",
            "country:",
            "tools[0].replacement.arguments.country",
            ("not an argument of 'lookup'",),
        ),
        (
            "              city: {type: string, description: Name of the city}",
            "              city: {type: integer}",
            "place.city",
            "tools[0].replacement.arguments.city",
            ("must accept exactly what 'city' accepts",),
        ),
        (
            "            required: [city]\n",
            "",
            "place.city",
            "tools[0].replacement.arguments.city",
            ("'city' must be required",),
        ),
        (
            "        city: place.city\n",
            "        city: place\n",
            "place\n",
            "tools[0].replacement.arguments.city",
            ("must accept exactly",),
        ),
        (
            "        type: object\n        properties:\n          place:",
            "        type: array\n        properties:\n          place:",
            "type: array",
            "tools[0].replacement.input_schema",
            ("type must be 'object'",),
        ),
    ],
)
def test_an_unsound_replacement_is_reported_at_its_place(
    old: str, new: str, needle: str, path: str, words: tuple[str, ...]
) -> None:
    text = declared(edit(old, new, REPLACEMENT))
    problems = problems_of(text)
    (problem,) = [p for p in problems if p.path == path]
    others = [p.message for p in problems if p.path != path]  # a moved argument also leaves its old place empty
    assert others in ([], ["'place.city' is required but no original argument is placed there"]), others
    assert_problem(problem, at(text, needle), path, *words)


def test_every_original_argument_needs_a_place_and_every_required_place_an_argument() -> None:
    replacement = edit("        city: place.city\n", "        {}\n", REPLACEMENT).replace(
        "      arguments:\n        {}", "      arguments: {}"
    )
    text = declared(replacement)
    messages = {(p.path, p.message) for p in problems_of(text)}
    assert ("tools[0].replacement.arguments", "every argument of 'lookup' needs a place; missing ['city']") in messages
    assert ("tools[0].replacement.input_schema",
            "'place' is required but no original argument is placed there") in messages  # fmt: skip


def test_two_arguments_may_not_share_a_place() -> None:
    base = edit("        city: {type: string}\n", "        city: {type: string}\n        near: {type: string}\n")
    replacement = edit("        city: place.city\n", "        city: place.city\n        near: place\n", REPLACEMENT)
    text = edit(ANCHOR, ANCHOR + replacement, base)
    messages = [p.message for p in problems_of(text)]
    assert any("overlaps the place of 'city'" in m for m in messages), messages


def test_two_replacements_may_not_share_a_name() -> None:
    second = """      result: {text: "Code {{ code }}"}
"""
    text = edit(
        second,
        second
        + REPLACEMENT.replace("city: place.city", "code: place.city").replace(
            "city: {type: string, description: Name of the city}", "city: {type: string}"
        ),
        declared(),
    )
    messages = [(p.path, p.message) for p in problems_of(text)]
    assert ("tools[1].replacement.name",
            "'city_code' is already the name of a tool or of another replacement") in messages  # fmt: skip

"""The perturbed listing differs from the original only in the intended way, is deterministic, and collision-free.

Each intervention has its own check of what changes and what stays (`CHECKS`, keyed by the registry: a new intervention
without a check fails `test_every_intervention_has_a_listing_check`). The listings are the real served tools of an
`Episode` on every shipped scenario, compared with the clean listing of the same scenario.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcp_hazard.interventions import REGISTRY, Surface, apply_all
from mcp_hazard.interventions.cause_effect import CAUSE_EFFECT, ENTITIES, familiar
from mcp_hazard.interventions.naming import NEUTRAL, REALISTIC
from mcp_hazard.interventions.surface import _WRITTEN
from mcp_hazard.scenario.models import Replacement
from mcp_hazard.server.served_episode import SUBMIT_TOOL

from .support import (
    KINDS,
    PAIRS,
    argument_names,
    listing,
    original_names,
    scenario_tools,
    shipped,
    tool_texts,
    words,
)

SEEDS = (0, 1, 7)
SEEDLESS = {"replace"}  # the one intervention whose listing does not depend on the seed (see the determinism test)
Tools = list[dict[str, Any]]

EXPLANATION = re.compile(r" \(In these tools, a '(\w+)' is a (\w+)\.\)")
REORDER_SENTENCE = re.compile(r"Arguments, in order: ([\w, ]+)\.")
AUGMENT_SENTENCE = re.compile(r'pass (\w+)="[^"]*"\.')


def _schema(tool: dict[str, Any]) -> dict[str, Any]:
    return dict(tool["inputSchema"])


def _props(tool: dict[str, Any]) -> dict[str, Any]:
    return dict(_schema(tool).get("properties") or {})


def _without(mapping: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k not in keys}


def _no_descriptions(value: Any) -> Any:
    """A schema with every description removed (the keyword, not a property that happens to be called so)."""
    if isinstance(value, list):
        return [_no_descriptions(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "description" and isinstance(item, str):
            continue
        if key == "properties" and isinstance(item, dict):
            out[key] = {name: _no_descriptions(sub) for name, sub in item.items()}
        else:
            out[key] = _no_descriptions(item)
    return out


def _renamed_arguments(clean: dict[str, Any], schema: dict[str, Any], pattern: str) -> None:
    """`schema` holds the clean tool's arguments under new names: same sub-schemas, same order, required mapped."""
    before, after = _props(clean), dict(schema.get("properties") or {})
    assert list(after.values()) == list(before.values()), (clean["name"], "argument schemas changed")
    mapping = dict(zip(before, after, strict=True))
    for old, new in mapping.items():
        assert new != old, (clean["name"], old, "argument kept its name")
        assert re.fullmatch(pattern, new), (clean["name"], old, new, pattern)
    if "required" in _schema(clean):
        assert schema["required"] == [mapping[r] for r in _schema(clean)["required"]], clean["name"]


# -- one check per intervention: what changes, what stays -------------------------------------------------------------


def check_rename(clean: Tools, served: Tools) -> None:
    for before, after in zip(clean, served, strict=True):
        assert re.fullmatch(r"tool_[a-z]+(_\d+)?", after["name"]), after["name"]
        assert after["name"].split("_")[1] in NEUTRAL
        assert _without(after, "name") == _without(before, "name")


def check_reorder(clean: Tools, served: Tools) -> None:
    for before, after in zip(clean, served, strict=True):
        old, new = _props(before), _props(after)
        if len(old) < 2:  # nothing to reorder: the tool is served as it was
            assert after == before
            continue
        assert _without(after, "description", "inputSchema") == _without(before, "description", "inputSchema")
        assert new == old and list(new) != list(old), (before["name"], list(old), list(new))  # same set, other order
        required = _schema(before).get("required")
        if required is not None:
            assert _schema(after)["required"] == [name for name in new if name in required]
        assert _without(_schema(after), "properties", "required") == _without(_schema(before), "properties", "required")
        assert after["description"] == f"{before['description'].rstrip()} Arguments, in order: {', '.join(new)}."


def check_augment(clean: Tools, served: Tools) -> None:
    for before, after in zip(clean, served, strict=True):
        old, new = _props(before), _props(after)
        added = [name for name in new if name not in old]
        assert len(added) == 1, (before["name"], added)
        (name,) = added
        assert list(new) == [*old, name] and _without(new, name) == old
        extra = new[name]
        assert set(extra) == {"type", "const", "description"} and extra["type"] == "string", extra
        assert _schema(after)["required"] == [*(_schema(before).get("required") or []), name]
        assert _without(_schema(after), "properties", "required") == _without(_schema(before), "properties", "required")
        assert after["description"] == f'{before["description"].rstrip()} Always pass {name}="{extra["const"]}".'
        assert _without(after, "description", "inputSchema") == _without(before, "description", "inputSchema")


def _declared_replacements() -> dict[str, Replacement]:
    """Declared replacements of the shipped scenarios by tool name (names that mean one tool only)."""
    found: dict[str, list[Replacement | None]] = {}
    for loaded in shipped():
        for tool in loaded.model.tools:
            found.setdefault(tool.name, []).append(tool.replacement)
    return {name: r[0] for name, r in found.items() if len(r) == 1 and r[0] is not None}


def check_replace(clean: Tools, served: Tools) -> None:
    declared = _declared_replacements()
    assert declared, "a shipped scenario declares a replacement, so the declared path is checked here"
    for before, after in zip(clean, served, strict=True):
        assert after["name"] != before["name"]
        replacement = declared.get(before["name"])
        if replacement is not None:  # served exactly as declared; nothing else changes
            assert (after["name"], after["inputSchema"]) == (replacement.name, replacement.input_schema)
            assert after["description"] == replacement.description
            assert _without(after, "name", "inputSchema", "description") == _without(
                before, "name", "inputSchema", "description"
            )
            continue
        assert _without(after, "name", "inputSchema") == _without(before, "name", "inputSchema")
        schema = _schema(after)
        assert _without(schema, "properties") == {
            "type": "object",
            "required": ["request"],
            "additionalProperties": False,
        }
        assert list(schema["properties"]) == ["request"]
        request = schema["properties"]["request"]
        assert request["type"] == "object" and isinstance(request.get("description"), str)
        _renamed_arguments(before, request, r"[a-z][a-z0-9_]*")
        kept = _without(_schema(before), "properties", "required", "$schema", "description")
        assert _without(request, "properties", "required", "description") == kept


def _check_names(pattern: str) -> Callable[[Tools, Tools], None]:
    def check(clean: Tools, served: Tools) -> None:
        for before, after in zip(clean, served, strict=True):
            assert after["name"] != before["name"] and re.fullmatch(pattern, after["name"]), after["name"]
            assert _without(after, "name", "inputSchema") == _without(before, "name", "inputSchema")
            _renamed_arguments(before, _schema(after), pattern)
            assert _without(_schema(after), "properties", "required") == _without(
                _schema(before), "properties", "required"
            )

    return check


REALISTIC_NAME = rf"({'|'.join(REALISTIC)})_({'|'.join(REALISTIC)})(_\d+)?"
ENTITY_NAME = rf"({'|'.join(ENTITIES)})(_\d+)?"


def _check_relation(contradict: bool) -> Callable[[Tools, Tools], None]:
    """names=contradicting / names=random-realistic: each tool is `OUTPUT_from_INPUT` over real entities, its first
    argument is INPUT, and (OUTPUT, INPUT) is a familiar (cause, effect) pair served the other way round, or no
    familiar pair at all; schemas and descriptions are kept."""
    relation = re.compile(r"(?P<output>[a-z_]+?)_from_(?P<given>[a-z_]+?)(_\d+)?")

    def check(clean: Tools, served: Tools) -> None:
        for before, after in zip(clean, served, strict=True):
            match = relation.fullmatch(after["name"])
            assert match and match["output"] in ENTITIES and match["given"] in ENTITIES, after["name"]
            assert _without(after, "name", "inputSchema") == _without(before, "name", "inputSchema")
            _renamed_arguments(before, _schema(after), ENTITY_NAME)
            if _props(before):
                assert next(iter(_schema(after)["properties"])) == match["given"]
            pair = (match["output"], match["given"])
            assert (pair in CAUSE_EFFECT) if contradict else not familiar(*pair), pair
            if not contradict:
                assert not any(familiar(match["output"], arg) for arg in _schema(after)["properties"])

    return check


def check_substitute(clean: Tools, served: Tools) -> None:
    for before, after in zip(clean, served, strict=True):  # nothing but descriptions changes
        assert after["name"] == before["name"]
        assert _no_descriptions(_without(after, "description")) == _no_descriptions(_without(before, "description"))
    explained = [(i, m) for i, t in enumerate(served) for m in EXPLANATION.finditer(t["description"])]
    assert len(explained) == 1, f"expected one explanation of the new term, found {len(explained)}"
    index, match = explained[0]
    token, concept = match.group(1), match.group(2)
    assert index == 0 and token != concept
    for before, after in zip(clean, served, strict=True):
        for old, new in zip(tool_texts(before), tool_texts(after), strict=True):
            new = EXPLANATION.sub("", new)
            assert concept not in words(new) and f"{concept}s" not in words(new), (after["name"], new)
            undone = re.sub(rf"\b{token}(s?)\b", lambda m: concept + m.group(1), new)
            assert undone.lower() == old.lower(), (after["name"], old, new)
    assert any(token in words(EXPLANATION.sub("", text)) for tool in served for text in tool_texts(tool))


CHECKS: dict[str, Callable[[Tools, Tools], None]] = {
    "rename": check_rename,
    "reorder": check_reorder,
    "augment": check_augment,
    "replace": check_replace,
    "names=random": _check_names(r"t_[a-z]{6}"),
    "names=realistic": _check_names(REALISTIC_NAME),
    "names=contradicting": _check_relation(True),
    "names=random-realistic": _check_relation(False),
    "substitute": check_substitute,
}


def test_every_intervention_has_a_listing_check() -> None:
    assert set(CHECKS) == set(REGISTRY), f"interventions without a listing check: {set(REGISTRY) - set(CHECKS)}"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("loaded", shipped(), ids=lambda s: s.id)
@pytest.mark.parametrize("kind", KINDS)
def test_listing_differs_only_as_intended(kind: str, loaded: Any, seed: int) -> None:
    clean, served = listing(loaded), listing(loaded, [kind], seed)
    assert served[-1] == clean[-1] and served[-1]["name"] == SUBMIT_TOOL  # submit_answer is never perturbed
    assert len(served) == len(clean)
    CHECKS[kind](scenario_tools(clean), scenario_tools(served))


# -- determinism ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kinds", [(k,) for k in KINDS] + PAIRS, ids="+".join)
def test_same_seed_same_listing_and_other_seeds_other_listings(kinds: tuple[str, ...]) -> None:
    for loaded in shipped():
        assert listing(loaded, kinds, 5) == listing(loaded, kinds, 5), loaded.id
    travel = next(s for s in shipped() if s.id == "travel")
    distinct = {json.dumps(listing(travel, kinds, seed), sort_keys=True) for seed in range(10)}
    if set(kinds) <= SEEDLESS:  # replace derives its names from the original ones (synonyms): no seed involved
        assert len(distinct) == 1, f"{kinds}: expected one listing for every seed"
    elif kinds != ("replace", "reorder"):  # that pair is test_reorder_after_replace_still_reorders
        assert len(distinct) >= 2, f"{kinds}: seeds 0-9 all give the same listing"


# -- collisions -------------------------------------------------------------------------------------------------------


def _collisions(loaded: Any, clean: Tools, served: Tools) -> list[str]:
    """Duplicate tool names, duplicate argument names in one tool, and new names that reuse an original name."""
    problems = []
    names = [tool["name"] for tool in served]
    if len(set(names)) != len(names):
        problems.append(f"duplicate tool names: {sorted(n for n in names if names.count(n) > 1)}")
    originals = original_names(loaded)
    for before, after in zip(clean, served, strict=True):
        if after["name"] != before["name"] and after["name"] in originals:
            problems.append(f"tool {before['name']} renamed to the original name {after['name']!r}")
        args = argument_names(after["inputSchema"])
        if len(set(args)) != len(args):
            problems.append(f"{after['name']}: duplicate argument names {args}")
        own = set(_props(before))
        reused = [a for a in args if a not in own and a in originals]
        if reused:
            problems.append(f"{after['name']} (was {before['name']}): new argument names reuse original names {reused}")
    return problems


@pytest.mark.parametrize("kinds", [(k,) for k in KINDS] + PAIRS, ids="+".join)
def test_names_are_collision_free_and_never_reuse_an_original(kinds: tuple[str, ...]) -> None:
    problems = []
    for loaded in shipped():
        clean = listing(loaded)
        for seed in (0, 1, 2):
            problems += [
                f"{loaded.id} seed {seed}: {p}" for p in _collisions(loaded, clean, listing(loaded, kinds, seed))
            ]
    assert not problems, "\n".join(problems)


# Listings beyond the shipped ones: tool and argument names drawn from words an API really uses, including the very
# words the interventions write (synonyms of replace, augment's argument names, the name lists).
TOOL_VERBS = ("get", "search", "list", "find", "fetch", "locate", "check", "book", "reserve", "create", "send", "track")
TOOL_NOUNS = ("fare", "city_code", "route", "invoice", "flights", "service", "x", "quote")
ARGUMENTS = ("date", "day", "city", "town", "code", "key", "name", "label", "amount", "value", "from", "source", "to",
             "target", "origin", "start", "destination", "end", "id", "identifier", "query", "terms", "channel",
             "request", "request_mode", "api_profile", "start_date", "origin_date", "city_code", "town_key",
             "date_value", "currency", "page")  # fmt: skip


@st.composite
def synthetic_listing(draw: st.DrawFn) -> list[Surface]:
    names = draw(st.lists(st.tuples(st.sampled_from(TOOL_VERBS), st.sampled_from(TOOL_NOUNS)).map("_".join),
                          min_size=1, max_size=5, unique=True))  # fmt: skip
    surfaces = []
    for name in names:
        args = draw(st.lists(st.sampled_from(ARGUMENTS), max_size=4, unique=True))
        schema = {"type": "object", "properties": {a: {"type": "string"} for a in args}, "required": args,
                  "additionalProperties": False}  # fmt: skip
        surfaces.append(Surface(name=name, description=f"Does {name}.", input_schema=schema, output_schema=None,
                                inner=name))  # fmt: skip
    return surfaces


def _surface(name: str, *args: str) -> Surface:
    schema = {"type": "object", "properties": {a: {"type": "string"} for a in args}, "required": list(args)}
    return Surface(name=name, description=f"Does {name}.", input_schema=schema, output_schema=None, inner=name)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(surfaces=synthetic_listing(), seed=st.integers(0, 2**63 - 1))
@example(surfaces=[_surface("get_city_code"), _surface("get_fare", "channel")], seed=0)  # augment adds `channel`
@example(surfaces=[_surface("get_fare", "to"), _surface("get_city_code", "target")], seed=0)  # replace: to -> target
def test_names_stay_collision_free_on_other_listings(kind: str, surfaces: list[Surface], seed: int) -> None:
    """The same rule as above on listings the shipped scenarios do not have (an argument called `day`, `key` or
    `channel` elsewhere in the listing, a tool already called `fetch_...`)."""
    originals = {s.name for s in surfaces} | {a for s in surfaces for a in s.input_schema["properties"]}
    served = apply_all([REGISTRY[kind](seed, "synthetic", "t", originals)], surfaces)
    names = [s.name for s in served]
    assert len(set(names)) == len(names), names
    for before, after in zip(surfaces, served, strict=True):
        assert after.name == before.name or after.name not in originals, (before.name, after.name)
        args = argument_names(after.input_schema)
        assert len(set(args)) == len(args), (after.name, args)
        reused = [a for a in args if a not in before.input_schema["properties"] and a in originals]
        assert not reused, f"{before.name} -> {after.name}: new argument names {reused} are original names"


# -- what one intervention writes stays true under the next -----------------------------------------------------------


def test_argument_names_written_into_descriptions_exist() -> None:
    """reorder writes "Arguments, in order: a, b." and augment 'Always pass x="v".' into the description. Under a
    later intervention those names must still be the served argument names, or the description points the agent at
    arguments that do not exist."""
    offenders = []
    for loaded in shipped():
        for kinds in PAIRS:
            if kinds[0] not in ("reorder", "augment"):
                continue
            for tool in scenario_tools(listing(loaded, kinds, 1)):
                served = set(argument_names(tool["inputSchema"]))
                named = [n for m in REORDER_SENTENCE.finditer(tool["description"]) for n in m.group(1).split(", ")]
                named += AUGMENT_SENTENCE.findall(tool["description"])
                missing = [n for n in named if n not in served]
                if missing:
                    offenders.append(f"{'+'.join(kinds)} {loaded.id}/{tool['name']}: {missing} not in {sorted(served)}")
    assert not offenders, f"{len(offenders)} descriptions name arguments that are not served, e.g.\n" + "\n".join(
        sorted({o.split(" ", 1)[0]: o for o in offenders}.values())
    )


def test_reorder_after_replace_still_reorders() -> None:
    """replace nests every argument in one `request` object; a reorder after it sees a tool with one argument and
    leaves it alone, so replace+reorder serves exactly what replace alone serves (the seed changes nothing)."""
    same = [s.id for s in shipped() if listing(s, ["replace", "reorder"], 1) == listing(s, ["replace"], 1)]
    assert not same, (
        f"replace+reorder is served exactly as replace alone on {same}: the nested arguments keep their order"
    )


def _terms(tools: Tools) -> list[tuple[str, str]]:
    """(token, concept) of every explanation substitute wrote (two after substitute+substitute)."""
    return [(m.group(1), m.group(2)) for tool in tools for m in EXPLANATION.finditer(tool["description"])]


@pytest.mark.parametrize("first", KINDS)
def test_substitute_last_leaves_the_concept_only_in_its_explanation(first: str) -> None:
    for loaded in shipped():
        served = scenario_tools(listing(loaded, [first, "substitute"], 3))
        terms = _terms(served)
        assert len(terms) == (2 if first == "substitute" else 1), terms
        concept = terms[-1][1]  # the one the last substitution renamed
        for tool in served:
            for text in tool_texts(tool):
                # argument names an intervention wrote ("Arguments, in order: year, office.") stay as served
                left = words(EXPLANATION.sub("", _WRITTEN.sub("", text)))
                assert concept not in left and f"{concept}s" not in left, (first, loaded.id, tool["name"], text)


def test_substitute_picks_the_scenario_concept_under_composition() -> None:
    """substitute renames "the most documented concept" of the tools. Composed after another intervention it must
    still pick a concept of the scenario's own documentation, not a word of the previous intervention's boilerplate
    ("Always pass ...", "All arguments of the request.", "Arguments, in order: ...")."""
    wrong = []
    for loaded in shipped():
        ((_token, alone),) = _terms(scenario_tools(listing(loaded, ["substitute"], 3)))
        for first in (k for k in KINDS if k != "substitute"):
            ((_token, composed),) = _terms(scenario_tools(listing(loaded, [first, "substitute"], 3)))
            if composed != alone:
                wrong.append(f"{first}+substitute on {loaded.id}: renames {composed!r} (alone: {alone!r})")
    assert not wrong, "\n".join(wrong)


# -- name policies ----------------------------------------------------------------------------------------------------


def test_realistic_names_are_unrelated_to_the_tool() -> None:
    """names=realistic gives "realistic words unrelated to the tool" (interventions/names.py): a new tool name
    must not carry a word of that tool's own original name (`get_invoice` served as `invoice_tariff` is a hint, not an
    unrelated name)."""
    related = []
    for loaded in shipped():
        clean = scenario_tools(listing(loaded))
        for seed in range(10):
            for before, after in zip(clean, scenario_tools(listing(loaded, ["names=realistic"], seed)), strict=True):
                shared = set(before["name"].split("_")) & set(after["name"].split("_"))
                if shared:
                    related.append(f"{loaded.id} seed {seed}: {before['name']} -> {after['name']}")
    assert not related, "\n".join(related)


def test_interventions_never_change_the_scenario_they_read() -> None:
    before = [copy.deepcopy(s.model.model_dump(mode="json")) for s in shipped()]
    for loaded in shipped():
        for kinds in [(k,) for k in KINDS] + PAIRS:
            listing(loaded, kinds, 2)
    assert [s.model.model_dump(mode="json") for s in shipped()] == before

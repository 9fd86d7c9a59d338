"""Damaged scenario files, generated: a shipped scenario with 1-3 of its values replaced (by null, a number, text, a
list, an object, a template that does not parse) or removed. Whatever the change, loading it either succeeds or is
a `ScenarioError` whose problems each name the file, line, column and field; never another exception. A file that
still loads is run through the whole check (`verify`: golden, recovering and naive agents under every kind that
applies), which must finish without a traceback.

tests/test_cli_validate.py shows the messages for hand-made cases; this is the net under them. Longer runs of the
same changes (thousands of files) found the two defects whose cases are below and in tests/hazards/test_params.py: a
`properties` that is not a mapping (an AttributeError in the table checks) and a tool whose arguments are all
optional (an ExceptionGroup traceback from `verify`).
"""

from __future__ import annotations

import copy
import random
import re
from pathlib import Path
from typing import Any

import yaml
from conftest import run_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_hazard.errors import ScenarioError
from mcp_hazard.load import parse_scenario

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted((ROOT / "scenarios" / "writes").glob("*.yaml"))
SOURCES = {path.name: yaml.safe_load(path.read_text(encoding="utf-8")) for path in FILES}
PROBLEM = re.compile(r"^damaged\.yaml:\d+:\d+: \S")  # file:line:column: field: message

VALUE_LIST: list[Any] = [
    None, 0, -1, 1.5, 10**30, "", "x", "{{ nope }}", "{{ 1 / 0 }}", "{{ " + "(" * 200 + " }}", [], [1], {}, {"a": 1},
    True, "a" * 5000, [[[[[]]]]],
]  # fmt: skip
VALUES = st.sampled_from(VALUE_LIST)
REMOVE = object()
CHANGES = st.lists(st.tuples(st.integers(0, 10**6), VALUES | st.just(REMOVE)), min_size=1, max_size=3)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _damaged(source: dict[str, Any], changes: list[tuple[int, Any]]) -> str:
    document = copy.deepcopy(source)
    for which, value in changes:
        paths = _paths(document)
        path = paths[which % len(paths)]
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        if value is REMOVE and isinstance(parent, dict):
            del parent[path[-1]]
        elif value is not REMOVE:
            parent[path[-1]] = copy.deepcopy(value)
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(SOURCES)), changes=CHANGES)
def test_a_damaged_scenario_loads_or_names_each_problem(name: str, changes: list[tuple[int, Any]]) -> None:
    text = _damaged(SOURCES[name], changes)
    try:
        parse_scenario(text, "damaged.yaml")
    except ScenarioError as exc:
        assert exc.problems and all(PROBLEM.match(str(problem)) for problem in exc.problems), exc.problems


def test_damaged_scenarios_that_still_load_verify_without_a_traceback(tmp_path: Path) -> None:
    """A fixed sample (seeded), so the slow part runs a bounded number of times: of 40 files with one value changed,
    those that still load, each verified under every kind that applies, for seed 0."""
    rng = random.Random(33)
    loaded = 0
    for attempt in range(40):
        name = rng.choice(sorted(SOURCES))
        text = _damaged(SOURCES[name], [(rng.randrange(10**6), rng.choice(VALUE_LIST))])
        try:
            parse_scenario(text, "damaged.yaml")
        except ScenarioError:
            continue
        loaded += 1
        path = tmp_path / f"{attempt}.yaml"
        path.write_text(text, encoding="utf-8")
        done = run_main("verify", str(path), "--seeds", "0", "--out", str(tmp_path / f"verify-{attempt}"))
        assert "Traceback" not in done.stderr and done.returncode in (0, 1, 2), (name, done.stderr[-2000:])
        assert done.returncode != 2 or done.stderr.count("\n") == 1, (name, done.stderr[-2000:])
    assert loaded >= 5, loaded  # the sample reaches the run, not only the loader


def test_properties_that_are_not_a_mapping_are_one_problem_not_an_attribute_error() -> None:
    """Found by a longer run of the changes above: the table rows' check read `properties` as a mapping after the
    schema check had already refused it."""
    document = copy.deepcopy(SOURCES["travel.yaml"])
    assert document["tools"][0]["behaviour"]["kind"] == "table"
    for value in ("x", [], 5):
        document["tools"][0]["input_schema"]["properties"] = value
        with_fallback = copy.deepcopy(document)
        with_fallback["tools"][0]["fallbacks"] = [{"tool": document["tools"][1]["name"], "arguments": {}}]
        for text in (yaml.safe_dump(document), yaml.safe_dump(with_fallback)):
            try:
                parse_scenario(text, "damaged.yaml")
            except ScenarioError as exc:
                problems = [str(problem) for problem in exc.problems]
                assert any("tools[0].input_schema: not a valid JSON Schema at properties" in p for p in problems)
            else:
                raise AssertionError(f"properties {value!r} loaded")

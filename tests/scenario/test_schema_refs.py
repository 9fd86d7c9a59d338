"""`$ref` in scenario schemas: only local references, checked at load (targets, cycles, fan-out), and a validator
that never retrieves anything, whatever schema it is given."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.errors import ScenarioError
from mcp_hazard.load import parse_scenario
from mcp_hazard.scenario.arguments import SchemaCache, argument_problem
from mcp_hazard.scenario.schema_refs import MAX_REF_STEPS, MAX_SUBSCHEMAS_PER_VALUE, ref_problems


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


TREE = {
    "$ref": "#/$defs/node",
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
        }
    },
}


def doubling(levels: int) -> dict[str, Any]:
    """A schema where each level meets the next one twice: 2^levels subschemas for one value."""
    defs: dict[str, Any] = {f"d{levels}": {"type": "integer"}}
    for level in range(levels):
        defs[f"d{level}"] = {"allOf": [{"$ref": f"#/$defs/d{level + 1}"}, {"$ref": f"#/$defs/d{level + 1}"}]}
    return {"type": "object", "properties": {"n": {"$ref": "#/$defs/d0"}}, "$defs": defs}


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(TREE, id="recursive-tree"),
        pytest.param({**obj(a={"$ref": "#/$defs/x"}), "$defs": {"x": {"type": "string"}}}, id="defs"),
        pytest.param({**obj(a={"type": "string"}, b={"$ref": "#/properties/a"})}, id="sibling-property"),
        pytest.param({**obj(a={"$ref": "#/$defs/a~1b"}), "$defs": {"a/b": True}}, id="escaped-slash-bool-target"),
        pytest.param({**obj(a={"$ref": "#/$defs/a%20b"}), "$defs": {"a b": {"type": "null"}}}, id="percent-encoded"),
        pytest.param({**obj(a={"$ref": "#/definitions/x"}), "definitions": {"x": {}}}, id="definitions"),
        pytest.param({"$id": "https://example.com/s", **obj(a={"$ref": "#/$defs/x"}), "$defs": {"x": {}}}, id="top-id"),
        pytest.param({**obj(a={"anyOf": [{"$ref": "#/$defs/x"}, {"type": "null"}]}), "$defs": {"x": {}}}, id="anyOf"),
        pytest.param({"then": {"$ref": "#"}, **obj()}, id="then-without-if-is-never-applied"),
        pytest.param(
            obj(a={"type": "array", "prefixItems": [{"type": "string"}, {"$ref": "#/properties/a/prefixItems/0"}]}),
            id="prefix-items-index",
        ),
        pytest.param(doubling(7), id="doubling-7-levels"),
    ],
)
def test_local_refs_to_subschemas_are_accepted(schema: dict[str, Any]) -> None:
    assert ref_problems(schema) == []


@pytest.mark.parametrize(
    ("schema", "where", "words"),
    [
        pytest.param(obj(a={"$ref": "file:///etc/passwd"}), ("properties", "a", "$ref"), "only local refs", id="file"),
        pytest.param(
            obj(a={"$ref": "http://127.0.0.1:9/s.json"}), ("properties", "a", "$ref"), "only local refs", id="http"
        ),
        pytest.param(obj(a={"$ref": "other.json#/x"}), ("properties", "a", "$ref"), "only local refs", id="relative"),
        pytest.param(obj(a={"$ref": ""}), ("properties", "a", "$ref"), "only local refs", id="empty"),
        pytest.param(
            obj(a={"$dynamicRef": "https://x.example/meta"}),
            ("properties", "a", "$dynamicRef"),
            "only local refs",
            id="dynamic-remote",
        ),
        pytest.param(obj(a={"$ref": "#name"}), ("properties", "a", "$ref"), "anchor", id="anchor"),
        pytest.param(
            obj(a={"$id": "https://x.example/", "$ref": "#"}), ("properties", "a", "$id"), "$id", id="nested-id"
        ),
        pytest.param(obj(a={"$ref": "#/$defs/nope"}), ("properties", "a", "$ref"), "points to nothing", id="nowhere"),
        pytest.param(obj(a={"$ref": "#/allOf/0"}), ("properties", "a", "$ref"), "points to nothing", id="no-allOf"),
        pytest.param(
            {**obj(a={"$ref": "#/allOf/01"}), "allOf": [{}]},
            ("properties", "a", "$ref"),
            "points to nothing",
            id="non-canonical-index",
        ),
        pytest.param(
            {**obj(a={"$ref": "#/$defs"}), "$defs": {"x": {}}},
            ("properties", "a", "$ref"),
            "not a subschema",
            id="defs-itself",
        ),
        pytest.param(
            obj(a={"type": "string", "description": "d"}, b={"$ref": "#/properties/a/description"}),
            ("properties", "b", "$ref"),
            "not a subschema",
            id="into-prose",
        ),
        pytest.param(
            obj(a={"const": {"$ref": "http://x.example/"}}, b={"$ref": "#/properties/a/const"}),
            ("properties", "b", "$ref"),
            "not a subschema",
            id="into-data",
        ),
        pytest.param(
            {**obj(a={"$ref": "#/$defs/a"}), "$defs": {"a": {"$ref": "#/$defs/a"}}},
            ("$defs", "a", "$ref"),
            "cycle",
            id="self-loop",
        ),
        pytest.param(
            {
                **obj(a={"$ref": "#/$defs/a"}),
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
            },
            None,
            "cycle",
            id="two-step-loop",
        ),
        pytest.param({**obj(), "allOf": [{"$ref": "#"}]}, ("allOf", 0, "$ref"), "cycle", id="root-allOf"),
        pytest.param({**obj(), "not": {"$ref": "#"}}, ("not", "$ref"), "cycle", id="root-not"),
        pytest.param(
            {**obj(), "if": {"type": "object"}, "then": {"$ref": "#"}}, ("then", "$ref"), "cycle", id="root-then"
        ),
        pytest.param(doubling(8), (), f"more than {MAX_SUBSCHEMAS_PER_VALUE} subschemas", id="doubling-8-levels"),
    ],
)
def test_refs_that_fetch_point_nowhere_loop_or_multiply_are_refused(
    schema: dict[str, Any], where: tuple[Any, ...] | None, words: str
) -> None:
    problems = ref_problems(schema)
    assert len(problems) == 1, problems
    path, message = problems[0]
    assert words in message, message
    assert "\n" not in message
    if where is not None:
        assert path == where


def test_a_large_schema_with_refs_is_checked_quickly() -> None:
    """The load-time count walks each subschema once per level: 3,000 properties, each a ref, 33 levels."""
    schema = {**obj(**{f"p{i}": {"$ref": "#/$defs/n"} for i in range(3000)}), "$defs": {"n": TREE["$defs"]["node"]}}
    schema["$defs"]["n"] = {**TREE["$defs"]["node"], "properties": {"children": {"type": "array", "items": {
        "$ref": "#/$defs/n"}}}}  # fmt: skip
    started = time.process_time()
    assert ref_problems(schema) == []
    assert time.process_time() - started < 10  # a guard: about 0.1 s here


# -- at call time: nothing is retrieved, nothing crashes ---------------------------------------------------------------


def test_a_file_ref_is_never_read_at_call_time(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"const": "TOP-SECRET-123"}', encoding="utf-8")
    schema = obj(word={"$ref": secret.as_uri()})
    problem = argument_problem(schema, {"word": "aaa"})
    assert problem is not None and "TOP-SECRET" not in problem
    assert "cannot be resolved" in problem and "\n" not in problem


def test_an_http_ref_is_never_fetched_at_call_time() -> None:
    contacted = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)

    def accept() -> None:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                listener.accept()[0].close()
            except TimeoutError:
                continue
            contacted.set()

    watcher = threading.Thread(target=accept)
    watcher.start()
    try:
        schema = obj(word={"$ref": f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"})
        problem = argument_problem(schema, {"word": "aaa"})
    finally:
        watcher.join()
        listener.close()
    assert problem is not None and "cannot be resolved" in problem
    assert not contacted.is_set()


def test_a_ref_loop_never_loaded_is_one_line_at_call_time() -> None:
    schema = {**obj(a={"$ref": "#/$defs/a"}), "$defs": {"a": {"$ref": "#/$defs/a"}}}
    problem = argument_problem(schema, {"a": 1})
    assert problem is not None and "\n" not in problem
    assert "schema" in problem


def test_an_exponential_schema_never_loaded_stops_at_the_budget() -> None:
    schema = doubling(24)  # 16 million subschemas for `n`: hours without the budget
    started = time.process_time()
    problem = argument_problem(schema, {"n": "not an integer"})
    assert time.process_time() - started < 30  # a guard: well under a second here
    assert problem is not None and str(MAX_REF_STEPS) in problem


def test_validators_are_built_with_a_registry_that_refuses_to_retrieve() -> None:
    validator = SchemaCache().validator(obj(a={"$ref": "https://json-schema.org/draft/2020-12/schema"}))
    assert validator.is_valid({"a": {"type": "string"}})  # the bundled metaschema, not a download
    with pytest.raises(Exception, match="Unresolvable"):
        SchemaCache().validator(obj(a={"$ref": "https://example.com/x.json"})).is_valid({"a": 1})


# -- through the scenario loader -------------------------------------------------------------------------------------

SCENARIO = """\
format: 1
id: refs
title: Refs
tools:
  - name: probe
    description: Echo a word.
    input_schema:
      type: object
      properties:
        word: {$ref: "REF"}
      required: [word]
      $defs:
        word: {type: string}
    behaviour:
      kind: compute
      result: {echo: "{{ word }}"}
tasks:
  - id: echo
    prompt: Echo the word aaa.
    answer: {value: aaa}
    workflow: sequential
    golden_path:
      steps:
        - {id: p, tool: probe, arguments: {word: aaa}}
      answer: "{{ p.echo }}"
"""


def test_a_local_ref_loads_and_its_golden_path_runs() -> None:
    scenario = parse_scenario(SCENARIO.replace("REF", "#/$defs/word"), "refs.yaml")
    assert scenario.tools[0].input_schema["properties"]["word"] == {"$ref": "#/$defs/word"}


@pytest.mark.parametrize(
    ("ref", "words"),
    [("file:///etc/passwd", "only local refs"), ("http://127.0.0.1:9/x.json", "only local refs"),
     ("word.json", "only local refs"), ("#/$defs/nope", "points to nothing")],
)  # fmt: skip
def test_a_bad_ref_is_one_problem_at_its_line_and_column(ref: str, words: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.replace("REF", ref), "refs.yaml")
    assert len(caught.value.problems) == 1, caught.value.problems
    problem = caught.value.problems[0]
    assert (problem.line, problem.column, problem.path) == (10, 22, "tools[0].input_schema.properties.word.$ref")
    assert words in problem.message


def test_refs_in_output_and_replacement_schemas_are_checked() -> None:
    text = SCENARIO.replace("REF", "#/$defs/word").replace(
        "    behaviour:\n",
        "    output_schema: {type: object, properties: {echo: {$ref: 'file:///etc/hosts'}}}\n"
        "    replacement:\n      name: probe2\n      input_schema: {type: object, properties: {w: {$ref: '#/x'}},"
        " required: [w]}\n      arguments: {word: w}\n    behaviour:\n",
        1,
    )
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "refs.yaml")
    paths = sorted(p.path for p in caught.value.problems if "$ref" in p.message)
    assert paths == [
        "tools[0].output_schema.properties.echo.$ref",
        "tools[0].replacement.input_schema.properties.w.$ref",
    ]

"""Loading scenario files: every problem reported at once, each with file, line, column, field path and message."""

from __future__ import annotations

import hashlib
import itertools
import textwrap
from pathlib import Path

import pytest

from mcp_hazard.errors import Problem, ScenarioError, UserError
from mcp_hazard.load import load_scenario, load_scenarios, parse_scenario
from mcp_hazard.scenario.files import LoadedScenario, scenario_files
from mcp_hazard.scenario.golden_check import run_golden_path

FILE = "mini.yaml"

BASE = """\
format: 1
id: mini
title: Mini scenario
tools:
  - name: lookup
    description: Look up the code of a city.
    input_schema:
      type: object
      properties:
        city: {type: string}
      required: [city]
      additionalProperties: false
    output_schema:
      type: object
      properties:
        code: {type: string}
      required: [code]
    behaviour:
      kind: table
      rows:
        - when: {city: Velmora}
          result: {code: VLM}
      default: {error: "Unknown city {{ city }}"}
  - name: describe
    description: Describe a code.
    input_schema:
      type: object
      properties:
        code: {type: string}
      required: [code]
    behaviour:
      kind: compute
      result: {text: "Code {{ code }}"}
tasks:
  - id: code-of-velmora
    prompt: What is the code of Velmora?
    answer: {value: VLM}
    workflow: sequential
    golden_path:
      steps:
        - {id: look, tool: lookup, arguments: {city: Velmora}}
        - {id: desc, tool: describe, arguments: {code: "{{ look.code }}"}}
      answer: "{{ look.code }}"
"""

COMPUTE_BEHAVIOUR = """\
      kind: compute
      result: {text: "Code {{ code }}"}
"""

_module_numbers = itertools.count()


def edit(old: str, new: str, text: str = BASE) -> str:
    assert text.count(old) == 1, f"{old!r} must occur exactly once"
    return text.replace(old, new)


def at(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """1-based line and column of the `occurrence`-th `needle` in `text`."""
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


def problems_of(text: str, **options: bool) -> list[Problem]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, FILE, **options)
    problems = caught.value.problems
    assert problems
    assert all(p.file == FILE for p in problems)
    return problems


def only_problem(text: str, **options: bool) -> Problem:
    problems = problems_of(text, **options)
    assert len(problems) == 1, "\n".join(map(str, problems))
    return problems[0]


def assert_problem(problem: Problem, where: tuple[int, int], path: str, *words: str) -> None:
    assert (problem.file, problem.line, problem.column, problem.path) == (FILE, *where, path), str(problem)
    for word in words:
        assert word in problem.message, str(problem)


# -- the valid base ------------------------------------------------------------------------------------------------


def test_base_scenario_is_valid_and_its_golden_path_reaches_the_answer() -> None:
    scenario = parse_scenario(BASE, FILE)
    assert scenario.id == "mini"
    assert [tool.name for tool in scenario.tools] == ["lookup", "describe"]
    run = run_golden_path(scenario, scenario.tasks[0])
    assert run.steps == [
        ("look", {"city": "Velmora"}, {"code": "VLM"}),
        ("desc", {"code": "VLM"}, {"text": "Code VLM"}),
    ]
    assert run.answer == "VLM"


def test_load_scenario_reads_the_file_and_hashes_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text(BASE, encoding="utf-8")
    loaded = load_scenario(path)
    assert isinstance(loaded, LoadedScenario)
    assert loaded.id == "mini"
    assert loaded.path == str(path)
    assert loaded.sha256 == hashlib.sha256(BASE.encode()).hexdigest()


# -- model problems ------------------------------------------------------------------------------------------------


def test_unknown_key_is_reported_at_the_key() -> None:
    text = edit("    description: Describe a code.\n", "    description: Describe a code.\n    colour: red\n")
    assert_problem(only_problem(text), at(text, "colour"), "tools[1].colour", "unknown key 'colour'")


def test_unknown_top_level_key_and_nested_unknown_key() -> None:
    text = edit("title: Mini scenario\n", "title: Mini scenario\nauthor: someone\n")
    assert_problem(only_problem(text), at(text, "author"), "author", "unknown key 'author'")
    text = edit("{id: look, tool: lookup,", "{id: look, tool: lookup, retries: 3,")
    assert_problem(
        only_problem(text), at(text, "retries"), "tasks[0].golden_path.steps[0].retries", "unknown key 'retries'"
    )


def test_wrong_type_is_reported_at_the_value() -> None:
    text = edit("title: Mini scenario", "title: 5")
    assert_problem(only_problem(text), at(text, "5"), "title", "valid string", "got 5")


def test_wrong_type_in_a_list_field() -> None:
    text = edit("required: [city]", "required: city")
    # a schema is free-form JSON, so a bad `required` is a JSON Schema problem, not a model one
    problem = only_problem(text)
    assert problem.path == "tools[0].input_schema"
    assert "not a valid JSON Schema" in problem.message
    text = edit("    workflow: sequential\n", "    workflow: sequential\n    tools: lookup\n")
    line, column = at(text, "tools: lookup")
    assert_problem(only_problem(text), (line, column + len("tools: ")), "tasks[0].tools", "valid list", '"lookup"')


@pytest.mark.parametrize(
    ("old", "new", "needle", "path", "words"),
    [
        ("description: Describe a code.", "description: 5", "5\n", "tools[1].description", ("valid string", "5")),
        ("kind: table", "kind: table\n      casefold: 'yes'", "'yes'", "tools[0].behaviour.casefold", ("boolean",)),
        ("format: 1", "format: 2", "2\n", "format", ("2", "expected 1")),
        (
            "arguments: {city: Velmora}",
            "arguments: [Velmora]",
            "[Velmora]",
            "tasks[0].golden_path.steps[0].arguments",
            ("dictionary",),
        ),
        (
            "    behaviour:\n      kind: compute\n",
            "    behaviour: compute\n    x:\n      kind: compute\n",
            "compute\n",
            "tools[1].behaviour",
            ("compute",),
        ),
        (
            "      kind: compute\n",
            "      kind: compute\n      let: {a: 5}\n",
            "5}",
            "tools[1].behaviour.let.a",
            ("valid string",),
        ),
        (
            "      kind: compute\n",
            "      kind: compute\n      errors: [{if: true, error: x}]\n",
            "true",
            "tools[1].behaviour.errors[0].if",
            ("valid string",),
        ),
    ],
    ids=["description-int", "casefold-text", "format-2", "arguments-list", "behaviour-text", "let-int", "guard-bool"],
)
def test_wrong_types_are_reported_at_the_value(
    old: str, new: str, needle: str, path: str, words: tuple[str, ...]
) -> None:
    text = edit(old, new)
    problems = problems_of(text)
    problem = next((p for p in problems if p.path == path), None)
    assert problem is not None, "\n".join(map(str, problems))
    assert (problem.line, problem.column) == at(text, needle), str(problem)
    for word in words:
        assert word in problem.message, str(problem)


def test_behaviour_without_kind_says_kind_is_needed() -> None:
    text = edit(COMPUTE_BEHAVIOUR, "      result: {text: x}\n")
    problem = only_problem(text)
    assert problem.path.startswith("tools[1].behaviour")
    assert "kind" in problem.message


def test_empty_tool_list() -> None:
    text = BASE[: BASE.index("tools:")] + "tools: []\n" + BASE[BASE.index("tasks:") :]
    assert_problem(only_problem(text), at(text, "[]"), "tools", "at least 1")


def test_value_outside_a_literal_set() -> None:
    text = edit("workflow: sequential", "workflow: loop")
    assert_problem(only_problem(text), at(text, "loop"), "tasks[0].workflow", '"loop"', "sequential", "parallel")


def test_missing_required_field_is_reported_at_its_mapping() -> None:
    text = edit("    prompt: What is the code of Velmora?\n", "")
    assert_problem(only_problem(text), at(text, "id: code-of-velmora"), "tasks[0]", "missing required field 'prompt'")


def test_unknown_behaviour_kind() -> None:
    text = edit(COMPUTE_BEHAVIOUR, "      kind: magic\n      result: {text: x}\n")
    problem = only_problem(text)
    assert problem.path in ("tools[1].behaviour", "tools[1].behaviour.kind")
    assert problem.line == at(text, "kind: magic")[0]
    assert "magic" in problem.message
    for kind in ("table", "constant", "compute", "python"):
        assert kind in problem.message


def test_unknown_behaviour_kind_is_named_even_when_kind_comes_last() -> None:
    """The message must name the unknown kind itself, not a cut-down dump of the whole behaviour mapping."""
    text = edit(
        COMPUTE_BEHAVIOUR,
        '      result: {text: "a result template long enough to push the kind out of a short excerpt"}\n'
        "      kind: magic\n",
    )
    problem = only_problem(text)
    assert problem.path in ("tools[1].behaviour", "tools[1].behaviour.kind")
    assert "'magic'" in problem.message or '"magic"' in problem.message, str(problem)


def test_answer_spec_that_does_not_fit_its_rule() -> None:
    text = edit("answer: {value: VLM}", "answer: {value: VLM, match: numeric}")
    assert_problem(only_problem(text), at(text, "{value: VLM, match"), "tasks[0].answer", "needs a number")


def test_top_level_must_be_a_mapping() -> None:
    assert_problem(only_problem("- a\n- b\n"), (1, 1), "", "must be a mapping")


def test_yaml_problems_pass_through_with_the_file_name() -> None:
    text = edit("title: Mini scenario", "title: [Mini scenario")
    problem = only_problem(text)
    assert problem.file == FILE and problem.line is not None and "invalid YAML" in problem.message


# -- reference checks ----------------------------------------------------------------------------------------------


def test_golden_step_naming_a_missing_tool() -> None:
    text = edit("tool: describe,", "tool: nowhere,")
    assert_problem(
        only_problem(text), at(text, "nowhere"), "tasks[0].golden_path.steps[1].tool", "no tool named 'nowhere'"
    )


def test_golden_step_tool_not_served_for_the_task() -> None:
    text = edit("    workflow: sequential\n", "    workflow: sequential\n    tools: [lookup]\n")
    assert_problem(
        only_problem(text),
        at(text, "describe,"),
        "tasks[0].golden_path.steps[1].tool",
        "tool 'describe' is not served for task 'code-of-velmora'",
    )


def test_task_tools_naming_a_missing_tool() -> None:
    text = edit("    workflow: sequential\n", "    workflow: sequential\n    tools: [lookup, describe, ghost]\n")
    assert_problem(only_problem(text), at(text, "ghost"), "tasks[0].tools[2]", "no tool named 'ghost'")


def test_argument_referring_to_a_later_step() -> None:
    text = edit("arguments: {city: Velmora}", 'arguments: {city: "{{ desc.text }}"}')
    assert_problem(
        only_problem(text),
        at(text, '{city: "{{ desc'),
        "tasks[0].golden_path.steps[0].arguments",
        "refers to ['desc']",
        "not earlier steps",
    )


def test_argument_referring_to_its_own_step() -> None:
    text = edit('arguments: {code: "{{ look.code }}"}', 'arguments: {code: "{{ desc.text }}"}')
    assert_problem(
        only_problem(text), at(text, '{code: "{{ desc'), "tasks[0].golden_path.steps[1].arguments", "refers to ['desc']"
    )


def test_answer_referring_to_an_unknown_step() -> None:
    text = edit('answer: "{{ look.code }}"', 'answer: "{{ lok.code }}"')
    assert_problem(only_problem(text), at(text, '"{{ lok'), "tasks[0].golden_path.answer", "refers to ['lok']")


def test_duplicate_step_id() -> None:
    text = edit("{id: desc, tool: describe", "{id: look, tool: describe")
    assert_problem(
        only_problem(text),
        at(text, "look, tool: describe"),
        "tasks[0].golden_path.steps[1].id",
        "duplicate step id 'look'",
    )


def test_table_row_naming_an_unknown_argument() -> None:
    text = edit("when: {city: Velmora}", "when: {town: Velmora}")
    assert_problem(
        only_problem(text), at(text, "Velmora}"), "tools[0].behaviour.rows[0].when.town", "'town' is not an argument"
    )


# -- golden path execution -----------------------------------------------------------------------------------------


def test_golden_path_that_does_not_reach_the_canonical_answer() -> None:
    text = edit("answer: {value: VLM}", "answer: {value: XYZ}")
    assert_problem(
        only_problem(text),
        at(text, '"{{ look.code }}"\n'),
        "tasks[0].golden_path.answer",
        'golden path yields "VLM"',
        'canonical answer "XYZ"',
        "rule exact",
    )


def test_golden_path_answer_is_matched_with_the_tasks_rule() -> None:
    assert parse_scenario(edit("answer: {value: VLM}", "answer: {value: vlm, match: case_insensitive}"), FILE)
    text = edit("answer: {value: VLM}", "answer: {value: vlm}")
    assert "rule exact" in only_problem(text).message


def test_golden_step_arguments_violating_the_input_schema() -> None:
    text = edit("arguments: {city: Velmora}", "arguments: {city: 5}")
    problem = only_problem(text)
    assert problem.path.startswith("tasks[0].golden_path.steps[0]")
    assert problem.line == at(text, "{city: 5}")[0]
    assert "argument 'city'" in problem.message and "not of type 'string'" in problem.message


def test_golden_step_with_an_argument_the_schema_forbids() -> None:
    text = edit("arguments: {city: Velmora}", "arguments: {city: Velmora, country: X}")
    problem = only_problem(text)
    assert problem.path.startswith("tasks[0].golden_path.steps[0]")
    assert "country" in problem.message


def test_golden_step_hitting_a_declared_error() -> None:
    text = edit("arguments: {city: Velmora}", "arguments: {city: Pressa}")
    problem = only_problem(text)
    assert problem.path.startswith("tasks[0].golden_path.steps[0]")
    assert problem.line == at(text, "{city: Pressa}")[0]
    assert "returned an error: Unknown city Pressa" in problem.message


def test_golden_step_whose_behaviour_fails_at_run_time() -> None:
    text = edit('result: {text: "Code {{ code }}"}', 'result: {text: "Code {{ code.missing }}"}')
    problem = only_problem(text)
    assert problem.path.startswith("tasks[0].golden_path.steps[1]")
    assert "golden path does not work" in problem.message and "describe behaviour failed" in problem.message


def test_expression_that_cannot_parse_is_reported_where_it_is_written() -> None:
    text = edit('result: {text: "Code {{ code }}"}', 'result: {text: "Code {{ code.__class__ }}"}')
    assert_problem(only_problem(text), at(text, '{text: "Code {{ code.__'), "tools[1].behaviour.result", "'_'")
    text = edit('answer: "{{ look.code }}"', 'answer: "{{ lambda: 1 }}"')
    assert_problem(only_problem(text), at(text, '"{{ lambda'), "tasks[0].golden_path.answer", "Lambda")


# -- schema checks -------------------------------------------------------------------------------------------------


def test_invalid_input_schema() -> None:
    text = edit("        city: {type: string}", "        city: {type: strung}")
    assert_problem(
        only_problem(text),
        at(text, "type: object"),
        "tools[0].input_schema",
        "not a valid JSON Schema",
        "properties.city.type",
    )


def test_input_schema_must_describe_an_object() -> None:
    text = edit(
        "      type: object\n      properties:\n        city:", "      type: array\n      properties:\n        city:"
    )
    assert_problem(only_problem(text), at(text, "type: array"), "tools[0].input_schema", "type must be 'object'")


def test_output_schema_mismatch_of_a_static_result() -> None:
    text = edit("result: {code: VLM}", "result: {code: 5}")
    assert_problem(
        only_problem(text),
        at(text, "{code: 5}"),
        "tools[0].behaviour.rows[0].result",
        "does not match output_schema",
        "field 'code'",
        "not of type 'string'",
    )


def test_output_schema_requires_object_results() -> None:
    text = edit("result: {code: VLM}", "result: [VLM]")
    assert_problem(only_problem(text), at(text, "[VLM]"), "tools[0].behaviour.rows[0].result", "must be objects")


def test_output_schema_mismatch_of_a_computed_result_is_caught_by_the_golden_run() -> None:
    text = edit(
        "      kind: table\n      rows:\n        - when: {city: Velmora}\n          result: {code: VLM}\n"
        '      default: {error: "Unknown city {{ city }}"}\n',
        '      kind: compute\n      result: {code: "{{ len(city) }}"}\n',
    )
    problem = only_problem(text)
    assert problem.path.startswith("tasks[0].golden_path.steps[0]")
    assert "does not match output_schema" in problem.message


# -- names and ids -------------------------------------------------------------------------------------------------


def test_reserved_tool_name() -> None:
    text = edit("name: describe", "name: submit_answer").replace("tool: describe", "tool: submit_answer")
    assert_problem(only_problem(text), at(text, "submit_answer"), "tools[1].name", "'submit_answer' is reserved")


def test_duplicate_tool_names() -> None:
    second = BASE[BASE.index("  - name: describe") : BASE.index("tasks:")]
    text = edit("tasks:\n", second.replace("Describe a code.", "Describe it again.") + "tasks:\n")
    assert_problem(
        only_problem(text),
        at(text, "describe\n    description: Describe it again"),
        "tools[2].name",
        "duplicate tool name 'describe'",
    )


def test_duplicate_task_ids() -> None:
    task = BASE[BASE.index("  - id: code-of-velmora") :]
    text = BASE + task
    assert_problem(
        only_problem(text), at(text, "code-of-velmora", 2), "tasks[1].id", "duplicate task id 'code-of-velmora'"
    )


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("id: mini", "id: Mini Scenario", "id"),
        ("name: lookup", "name: look up", "tools[0].name"),
        ("id: code-of-velmora", "id: Code_Of_Velmora!", "tasks[0].id"),
        ("{id: look,", "{id: 1look,", "tasks[0].golden_path.steps[0].id"),
    ],
)
def test_identifiers_must_match_their_pattern(old: str, new: str, path: str) -> None:
    text = edit(old, new)
    problem = only_problem(text)
    assert problem.path == path
    assert "pattern" in problem.message


# -- python behaviours ---------------------------------------------------------------------------------------------


@pytest.fixture
def python_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"hazard_test_load_{next(_module_numbers)}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            def describe(args):
                return {"text": "Code " + args["code"]}
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("sys.path", list(__import__("sys").path))  # load_scenario may add folders; undo that too
    monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    return name


def python_text(module: str) -> str:
    return edit(COMPUTE_BEHAVIOUR, f'      kind: python\n      function: "{module}:describe"\n')


def test_python_behaviour_without_allow_python(python_module: str) -> None:
    text = python_text(python_module)
    assert_problem(only_problem(text), at(text, f'"{python_module}'), "tools[1].behaviour.function", "--allow-python")
    assert python_module not in __import__("sys").modules


def test_python_behaviour_with_allow_python(python_module: str) -> None:
    scenario = parse_scenario(python_text(python_module), FILE, allow_python=True)
    run = run_golden_path(scenario, scenario.tasks[0], allow_python=True)
    assert run.steps[1][2] == {"text": "Code VLM"}


def test_python_behaviour_with_a_missing_function(python_module: str) -> None:
    text = python_text(python_module).replace(":describe", ":nope")
    assert_problem(
        only_problem(text, allow_python=True), at(text, f'"{python_module}'), "tools[1].behaviour.function", "'nope'"
    )


# -- all problems at once ------------------------------------------------------------------------------------------


def test_several_model_problems_are_reported_together() -> None:
    text = edit("title: Mini scenario", "title: 5")
    text = edit("    description: Describe a code.\n", "    description: Describe a code.\n    colour: red\n", text)
    text = edit("workflow: sequential", "workflow: loop", text)
    text = edit("    prompt: What is the code of Velmora?\n", "", text)
    problems = problems_of(text)
    assert {p.path for p in problems} == {"title", "tools[1].colour", "tasks[0].workflow", "tasks[0]"}
    by_path = {p.path: p for p in problems}
    assert (by_path["title"].line, by_path["title"].column) == at(text, "5")
    assert (by_path["tools[1].colour"].line, by_path["tools[1].colour"].column) == at(text, "colour")
    assert (by_path["tasks[0].workflow"].line, by_path["tasks[0].workflow"].column) == at(text, "loop")
    assert "missing required field 'prompt'" in by_path["tasks[0]"].message


def test_several_semantic_problems_are_reported_together() -> None:
    text = edit("result: {code: VLM}", "result: {code: 5}")
    text = edit("name: describe", "name: submit_answer", text)
    text = edit("tool: describe,", "tool: nowhere,", text)
    text = edit('answer: "{{ look.code }}"', 'answer: "{{ lok.code }}"', text)
    text = text + BASE[BASE.index("  - id: code-of-velmora") :].replace("tool: describe,", "tool: submit_answer,")
    problems = problems_of(text)
    found = {(p.path, p.line) for p in problems}
    expected = {
        ("tools[0].behaviour.rows[0].result", at(text, "{code: 5}")[0]),
        ("tools[1].name", at(text, "submit_answer")[0]),
        ("tasks[0].golden_path.steps[1].tool", at(text, "nowhere")[0]),
        ("tasks[0].golden_path.answer", at(text, "lok.code")[0]),
        ("tasks[1].id", at(text, "code-of-velmora", 2)[0]),
    }
    assert expected <= found, "\n".join(map(str, problems))


def test_each_problem_prints_as_one_line() -> None:
    text = edit("title: Mini scenario", "title: 5")
    text = edit("workflow: sequential", "workflow: loop", text)
    for problem in problems_of(text):
        line = str(problem)
        assert "\n" not in line
        assert line.startswith(f"{FILE}:{problem.line}:{problem.column}: {problem.path}: ")


# -- files and directories -----------------------------------------------------------------------------------------


def test_missing_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(tmp_path / "absent.yaml")
    (problem,) = caught.value.problems
    assert problem.file == str(tmp_path / "absent.yaml")
    assert "cannot read file" in problem.message


def test_non_utf8_file_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(BASE.replace("Mini scenario", "Mini sc\u00e9nario").encode("latin-1"))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    (problem,) = caught.value.problems
    assert problem.file == str(path)
    assert "not UTF-8" in problem.message
    assert str(BASE.encode().index(b"Mini scenario") + len("Mini sc")) in problem.message


def test_load_scenarios_reports_duplicate_ids_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(BASE, encoding="utf-8")
    (tmp_path / "b.yml").write_text(BASE.replace("title: Mini scenario", "title: Another"), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a scenario", encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenarios([tmp_path])
    (problem,) = caught.value.problems
    assert problem.file == str(tmp_path / "b.yml")
    assert problem.path == "id"
    assert "scenario id 'mini'" in problem.message
    assert str(tmp_path / "a.yaml") in problem.message


def test_load_scenarios_collects_problems_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(edit("title: Mini scenario", "title: 5"), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(edit("workflow: sequential", "workflow: loop"), encoding="utf-8")
    (tmp_path / "c.yaml").write_text(BASE.replace("id: mini", "id: fine"), encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenarios([tmp_path])
    assert [(Path(p.file).name, p.path) for p in caught.value.problems] == [
        ("a.yaml", "title"),
        ("b.yaml", "tasks[0].workflow"),
    ]


def test_load_scenarios_loads_distinct_files_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(BASE.replace("id: mini", "id: second"), encoding="utf-8")
    (tmp_path / "a.yaml").write_text(BASE, encoding="utf-8")
    loaded = load_scenarios([tmp_path])
    assert [s.id for s in loaded] == ["mini", "second"]


def test_scenario_files_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file or directory"):
        scenario_files([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no scenario files"):
        scenario_files([tmp_path / "empty"])


def test_every_shipped_scenario_loads(scenarios_dir: Path) -> None:
    loaded = load_scenarios([scenarios_dir])
    assert "travel" in {s.id for s in loaded}
    for scenario in loaded:
        for task in scenario.model.tasks:
            run_golden_path(scenario.model, task)

"""Safe YAML reading: positions, malformed input, tags, duplicate and merge keys, size/alias/depth limits."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_hazard.errors import Problem, ScenarioError
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.yaml_source import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MAX_SAFE_INTEGER,
    MAX_SCALAR_CHARS,
    format_path,
    parse_yaml,
)


def problems_of(text: str, file: str = "f.yaml") -> list[Problem]:
    with pytest.raises(ScenarioError) as caught:
        parse_yaml(text, file)
    assert caught.value.problems, "a ScenarioError must carry at least one problem"
    return caught.value.problems


def only_problem(text: str) -> Problem:
    problems = problems_of(text)
    assert len(problems) == 1, problems
    return problems[0]


# -- positions -----------------------------------------------------------------------------------------------------


POSITIONS_DOC = """\
name: alpha
items:
  - first
  - {key: value, n: 3}
nested:
    deep:
        leaf: true
"""


def test_values_and_keys_are_located_1_based() -> None:
    data, positions = parse_yaml(POSITIONS_DOC, "f.yaml")
    assert data == {"name": "alpha", "items": ["first", {"key": "value", "n": 3}], "nested": {"deep": {"leaf": True}}}
    values = positions.values
    assert values[()] == (1, 1)
    assert values[("name",)] == (1, 7)
    assert values[("items", 0)] == (3, 5)
    assert values[("items", 1)] == (4, 5)
    assert values[("items", 1, "key")] == (4, 11)
    assert values[("items", 1, "n")] == (4, 21)
    assert values[("nested", "deep", "leaf")] == (7, 15)
    keys = positions.keys
    assert keys[("name",)] == (1, 1)
    assert keys[("items",)] == (2, 1)
    assert keys[("items", 1, "key")] == (4, 6)
    assert keys[("items", 1, "n")] == (4, 18)
    assert keys[("nested", "deep")] == (6, 5)
    assert keys[("nested", "deep", "leaf")] == (7, 9)


def test_locate_prefers_key_when_asked_and_walks_up_to_an_ancestor() -> None:
    _, positions = parse_yaml(POSITIONS_DOC, "f.yaml")
    assert positions.locate(("name",)) == (1, 7)
    assert positions.locate(("name",), prefer_key=True) == (1, 1)
    # a path below a scalar (or a missing field) falls back to the nearest known ancestor
    assert positions.locate(("items", 1, "missing")) == (4, 5)
    assert positions.locate(("nested", "deep", "leaf", "x", 3)) == (7, 15)
    assert positions.locate(()) == (1, 1)


def test_format_path_reads_like_the_user_would_write_it() -> None:
    assert format_path(()) == ""
    assert format_path(("tasks", 0, "golden_path", "steps", 2, "tool")) == "tasks[0].golden_path.steps[2].tool"
    assert format_path((0, "a")) == "[0].a"


# -- malformed YAML ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ("a: 1\nb: [1, 2\nc: 3\n", 3, 2, "flow sequence"),
        ("a: b: c\n", 1, 5, "mapping values are not allowed"),
        ("a:\n\t- 1\n", 2, 1, "'\\t'"),
        ("a: *nope\n", 1, 4, "undefined alias"),
        ("a: 1\n---\nb: 2\n", 2, 1, "single document"),
        ('a: "unterminated\n', 2, 1, "quoted scalar"),
    ],
)
def test_malformed_yaml_gives_one_problem_with_line_and_column(text: str, line: int, column: int, words: str) -> None:
    problem = only_problem(text)
    assert problem.file == "f.yaml"
    assert (problem.line, problem.column) == (line, column)
    assert problem.message.startswith("invalid YAML: ")
    assert words in problem.message
    assert str(problem).startswith(f"f.yaml:{line}:{column}: invalid YAML: ")


# -- tags ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "path", "tag"),
    [
        ("a: !!python/object:os.system {}\n", 1, 4, "a", "python/object:os.system"),
        ("a:\n  b: !!python/object/apply:os.system ['ls']\n", 2, 6, "a.b", "python/object/apply:os.system"),
        ("x: 1\nlist:\n  - ok\n  - !!python/name:os.system ''\n", 4, 5, "list[1]", "python/name:os.system"),
        ("a: !!binary aGVsbG8=\n", 1, 4, "a", "binary"),
        ("x: 1\na: !custom 5\n", 2, 4, "a", "!custom"),
        ("a: !custom [1, 2]\n", 1, 4, "a", "!custom"),
        ("a: !custom {k: v}\n", 1, 4, "a", "!custom"),
        ("a: !!set {x, y}\n", 1, 4, "a", "set"),
        ("a: !!omap [{x: 1}]\n", 1, 4, "a", "omap"),
    ],
)
def test_non_plain_tags_are_rejected_with_position(text: str, line: int, column: int, path: str, tag: str) -> None:
    problem = only_problem(text)
    assert (problem.line, problem.column, problem.path) == (line, column, path)
    assert tag in problem.message
    assert "not allowed" in problem.message


def test_python_tag_is_never_constructed(tmp_path, monkeypatch) -> None:
    """Even if PyYAML would know the tag, nothing is imported or called: the file is only composed."""
    calls: list[str] = []
    monkeypatch.setattr("os.system", lambda command: calls.append(command) or 0)
    problems_of("a: !!python/object/apply:os.system ['touch " + str(tmp_path / "pwned") + "']\n")
    assert calls == []
    assert not (tmp_path / "pwned").exists()


def test_explicit_standard_tags_are_allowed() -> None:
    data, _ = parse_yaml("a: !!str 5\nb: !!int '7'\nc: !!float 1\nd: !!bool true\ne: !!null ''\n", "f.yaml")
    assert data == {"a": "5", "b": 7, "c": 1.0, "d": True, "e": None}


# -- duplicate keys, merge keys, complex keys ----------------------------------------------------------------------


def test_duplicate_key_is_reported_at_the_second_occurrence() -> None:
    problem = only_problem("a: 1\nb:\n  c: 2\n  d: 3\n  c: 4\n")
    assert (problem.line, problem.column, problem.path) == (5, 3, "b.c")
    assert "duplicate key 'c'" in problem.message


def test_duplicate_key_at_top_level() -> None:
    problem = only_problem("id: a\ntitle: t\nid: b\n")
    assert (problem.line, problem.column, problem.path) == (3, 1, "id")
    assert "duplicate key 'id'" in problem.message


def test_merge_keys_are_rejected_at_the_merge_key() -> None:
    problem = only_problem("base: &b {x: 1}\nother:\n  y: 2\n  <<: *b\n")
    assert (problem.line, problem.column) == (4, 3)
    assert problem.path == "other"
    assert "merge keys ('<<')" in problem.message


def test_plain_aliases_without_merge_are_fine() -> None:
    data, _ = parse_yaml("base: &b {x: 1}\ncopy: *b\n", "f.yaml")
    assert data == {"base": {"x": 1}, "copy": {"x": 1}}


def test_complex_mapping_keys_are_rejected() -> None:
    problem = only_problem("? [1, 2]\n: 3\n")
    assert (problem.line, problem.column) == (1, 3)
    assert "mapping keys must be plain scalars" in problem.message


# -- limits --------------------------------------------------------------------------------------------------------


def billion_laughs(levels: int = 9, width: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_rejected_quickly_by_the_node_budget() -> None:
    text = billion_laughs()  # 10**9 values once expanded, under 1 KiB of text
    assert len(text) < 1024
    started = time.process_time()  # the work done, not the wall time a loaded machine stretches
    problem = only_problem(text)
    elapsed = time.process_time() - started
    assert elapsed < 3.0, f"alias bomb took {elapsed:.2f} s of CPU to reject"
    assert f"more than {MAX_NODES} values" in problem.message
    assert "alias" in problem.message
    assert problem.line is not None and problem.column is not None


def test_modest_alias_reuse_stays_within_the_budget() -> None:
    data, _ = parse_yaml(billion_laughs(levels=3, width=10), "f.yaml")
    assert len(data["a2"]) == 10 and len(data["a2"][0]) == 10 and data["a2"][9][9] == ["lol"] * 10


def test_recursive_alias_is_rejected_not_looped_forever() -> None:
    problem = only_problem("a: &a [*a]\n")
    assert "nesting deeper than" in problem.message


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100])
def test_deep_flow_nesting_is_rejected_with_position(depth: int) -> None:
    problem = only_problem("a: " + "[" * depth + "]" * depth + "\n")
    assert f"nesting deeper than {MAX_DEPTH} levels" in problem.message
    assert problem.line == 1 and problem.column is not None
    assert problem.path.startswith("a[0][0]")


def test_nesting_at_the_limit_is_accepted() -> None:
    depth = MAX_DEPTH - 1  # the mapping holding `a` is level 0, `a`'s list is level 1
    data, _ = parse_yaml("a: " + "[" * depth + "]" * depth + "\n", "f.yaml")
    node = data["a"]
    for _ in range(depth - 1):
        node = node[0]
    assert node == []


def test_deep_block_mapping_is_rejected() -> None:
    levels = MAX_DEPTH + 10
    text = "".join("  " * i + f"k{i}:\n" for i in range(levels)) + "  " * levels + "leaf\n"
    problem = only_problem(text)
    assert f"nesting deeper than {MAX_DEPTH} levels" in problem.message
    assert problem.line is not None
    assert problem.path.startswith("k0.k1.k2")


def test_extremely_deep_nesting_gives_a_problem_not_a_recursion_error() -> None:
    problem = only_problem("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nesting deeper than" in problem.message


def test_file_over_1_mib_is_rejected_before_parsing() -> None:
    assert MAX_FILE_BYTES == 1024 * 1024
    text = "a: '" + "x" * MAX_FILE_BYTES + "'\n"
    started = time.process_time()
    problem = only_problem(text)
    assert time.process_time() - started < 1.0
    assert problem.line is None and problem.column is None and problem.path == ""
    assert f"the limit is {MAX_FILE_BYTES}" in problem.message
    assert str(len(text.encode())) in problem.message


def test_size_limit_counts_bytes_not_characters() -> None:
    # 350k three-byte characters: far below the limit in characters, above it in UTF-8 bytes
    text = "a: '" + "\u20ac" * 350_000 + "'\n"
    assert len(text) < MAX_FILE_BYTES < len(text.encode())
    problem = only_problem(text)
    assert f"the limit is {MAX_FILE_BYTES}" in problem.message


def test_large_file_from_disk_is_rejected_by_load_scenario(tmp_path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("# " + "x" * MAX_FILE_BYTES + "\nid: a\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    (problem,) = caught.value.problems
    assert problem.file == str(path)
    assert f"the limit is {MAX_FILE_BYTES}" in problem.message


# -- empty input, scalars ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "   \n# c\n"])
def test_empty_file_is_one_problem_at_1_1(text: str) -> None:
    problem = only_problem(text)
    assert (problem.file, problem.line, problem.column, problem.path) == ("f.yaml", 1, 1, "")
    assert "empty" in problem.message


def test_timestamps_stay_strings() -> None:
    data, _ = parse_yaml(
        "day: 2026-03-14\nwhen: 2026-03-14T10:00:00Z\nspaced: 2026-03-14 10:00:00\nquoted: '2026-03-14'\n", "f.yaml"
    )
    assert data == {
        "day": "2026-03-14",
        "when": "2026-03-14T10:00:00Z",
        "spaced": "2026-03-14 10:00:00",
        "quoted": "2026-03-14",
    }
    assert all(type(value) is str for value in data.values())


def test_timestamp_inside_lists_and_as_key_stays_text() -> None:
    data, _ = parse_yaml("days: [2026-03-14, 2026-03-15]\n2026-01-01: new year\n", "f.yaml")
    assert data["days"] == ["2026-03-14", "2026-03-15"]
    assert data["2026-01-01"] == "new year"


def test_plain_scalars_become_json_values() -> None:
    data, _ = parse_yaml("i: 42\nf: 1.5\nb: true\nn: null\ns: text\nhex: 0x10\nneg: -3\n", "f.yaml")
    assert data == {"i": 42, "f": 1.5, "b": True, "n": None, "s": "text", "hex": 16, "neg": -3}
    assert type(data["i"]) is int and type(data["b"]) is bool


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", ".Inf"])
def test_non_finite_numbers_are_rejected_with_position(value: str) -> None:
    problem = only_problem(f"x: 1\na: {value}\n")
    assert (problem.line, problem.column, problem.path) == (2, 4, "a")
    assert value in problem.message


def test_problem_is_a_scenario_error_with_the_file_name() -> None:
    problems = problems_of("a: [\n", file="dir/my scenario.yaml")
    assert problems[0].file == "dir/my scenario.yaml"
    assert str(problems[0]).startswith("dir/my scenario.yaml:")


# -- scalars: converted here, never by PyYAML's constructors ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 017\n", 15),
        ("a: -0x1F\n", -31),
        ("a: 0b101\n", 5),
        ("a: 1_000\n", 1000),
        ("a: +7\n", 7),
        (f"a: {MAX_SAFE_INTEGER}\n", MAX_SAFE_INTEGER),
        (f"a: -{MAX_SAFE_INTEGER}\n", -MAX_SAFE_INTEGER),
        ("a: 0000000000000000000000000000000000000000000000000000000000000000000012\n", 10),
        ("a: 1.5e+3\n", 1500.0),
        ("a: 1_000.25\n", 1000.25),
        ("a: !!float 3\n", 3.0),
        ("a: On\n", True),
        ("a: !!bool no\n", False),
        ("a: !!null whatever\n", None),
        ("a: 2026-03-14\n", "2026-03-14"),
        ('a: "12:40"\n', "12:40"),
    ],
)
def test_plain_scalars_keep_their_yaml_1_1_meaning(text: str, expected: object) -> None:
    data, _ = parse_yaml(text, "f.yaml")
    assert data["a"] == expected and type(data["a"]) is type(expected)


@pytest.mark.parametrize(
    ("text", "column", "words"),
    [
        ("a: 12:40\n", 4, "base-60"),
        ("a: -1:30:00\n", 4, "base-60"),
        ("a: 1:30.5\n", 4, "base-60"),
        ("a: !!int 1:30\n", 4, "base-60"),
        ("a: " + "1:" * 30_000 + "1.5\n", 4, "base-60"),
        ("a: !!int abc\n", 4, "not an integer"),
        ("a: !!int ' 12'\n", 4, "not an integer"),
        ("a: !!float abc\n", 4, "not a number"),
        ("a: !!bool abc\n", 4, "not a boolean"),
        ("a: .inf\n", 4, "not a valid JSON number"),
        ("a: -.inf\n", 4, "not a valid JSON number"),
        ("a: .NaN\n", 4, "not a valid JSON number"),
        ("a: !!float nan\n", 4, "not a valid JSON number"),
        ("a: !!float 1e400\n", 4, "not a valid JSON number"),
        (f"a: {MAX_SAFE_INTEGER + 1}\n", 4, "outside the integers JSON carries exactly"),
        ("a: " + "9" * 5000 + "\n", 4, "outside the integers JSON carries exactly"),
        ("a: 0x" + "f" * 5000 + "\n", 4, "outside the integers JSON carries exactly"),
        ("a: 0b" + "1" * 54 + "\n", 4, "outside the integers JSON carries exactly"),
        ("!!int abc: 1\n", 1, "key 'abc' is not an integer"),
        ("12:30: x\n", 1, "key '12:30' is a base-60 number"),
    ],
)
def test_scalars_that_are_no_json_value_are_one_problem_at_their_place(text: str, column: int, words: str) -> None:
    started = time.process_time()
    problem = only_problem(text)
    assert time.process_time() - started < 5  # a guard: PyYAML took seconds on base-60 numbers of this size
    assert (problem.line, problem.column) == (1, column)
    assert words in problem.message and "\n" not in problem.message


@pytest.mark.parametrize(("character", "name"), [("\x00", "U+0000"), ("\x07", "U+0007"), ("\ufffe", "U+FFFE")])
def test_a_control_character_is_one_problem_at_its_place(character: str, name: str) -> None:
    problem = only_problem(f"a: 1\nb: x{character}y\n")
    assert (problem.line, problem.column) == (2, 5)
    assert problem.message == f"invalid YAML: character {name} is not allowed in YAML text"


def test_scalar_length_limit_is_checked_before_anything_is_built() -> None:
    at_limit = "a: '" + "x" * MAX_SCALAR_CHARS + "'\n"
    assert parse_yaml(at_limit, "f.yaml")[0]["a"] == "x" * MAX_SCALAR_CHARS
    problem = only_problem("a:\n  b: [ok, '" + "x" * (MAX_SCALAR_CHARS + 1) + "']\n")
    assert (problem.line, problem.column, problem.path) == (2, 11, "a.b[1]")
    assert f"the limit is {MAX_SCALAR_CHARS}" in problem.message
    problem = only_problem("a:\n  ? " + "k" * (MAX_SCALAR_CHARS + 1) + "\n  : 1\n")
    assert (problem.line, problem.column, problem.path) == (2, 5, "a")
    assert "a key of" in problem.message


def test_the_value_limit_stops_the_first_pass_before_anything_is_composed() -> None:
    """Values are counted on the parser's events: a file of many small values is refused at the first value past
    the limit, with its place, and never turned into a node graph."""
    text = "a: x\nb: [" + ",".join(["1"] * (MAX_NODES + 10)) + "]\n"
    started = time.process_time()
    problem = only_problem(text)
    assert time.process_time() - started < 10  # a guard: about 0.1 s
    assert problem.path == f"b[{MAX_NODES - 3}]" and problem.line == 2
    assert f"more than {MAX_NODES} values" in problem.message


def test_the_fast_parser_and_pyyaml_read_shipped_files_alike() -> None:
    """libyaml composes, PyYAML words the errors: both must build the same data and positions."""
    import yaml

    from mcp_hazard.scenario import yaml_source

    for path in sorted(Path(__file__).resolve().parents[2].joinpath("scenarios").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        fast = parse_yaml(text, path.name)
        original = yaml_source._FAST
        try:
            yaml_source._FAST = yaml.SafeLoader
            slow = parse_yaml(text, path.name)
        finally:
            yaml_source._FAST = original
        assert fast[0] == slow[0] and fast[1] == slow[1], path.name

"""`mcp-hazard validate` and `mcp-hazard schema` on real files, through `main()` in this process; the cases where the
process matters (a memory limit, importing a scenario's own Python module) start the real program."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import WAIT_S, CliRun, run_main

from mcp_hazard.errors import ScenarioError
from mcp_hazard.load import parse_scenario

REPO_ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = REPO_ROOT / "scenarios"
SHIPPED = sorted(p for p in SCENARIOS.iterdir() if p.suffix in (".yaml", ".yml"))

# file:line:col: path: message   (path is left out for problems that are not about one field, e.g. bad YAML)
PROBLEM_LINE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:(?P<path>[A-Za-z_][\w.\[\]-]*): )?(?P<msg>\S.*)$"
)

GOOD = """\
id: tiny
title: Tiny scenario
tools:
  - name: echo
    description: Echo a word back.
    input_schema:
      type: object
      properties:
        word: {type: string}
      required: [word]
    output_schema:
      type: object
      properties:
        echo: {type: string}
      required: [echo]
    behaviour:
      kind: compute
      errors:
        - {if: "len(word) == 0", error: "say something"}
      result: {echo: "{{ upper(word) }}"}
  - name: fixed
    description: Always the same.
    input_schema: {type: object}
    behaviour:
      kind: constant
      result: {value: 1}
tasks:
  - id: shout
    prompt: Shout the word 'hazard'.
    answer: {value: HAZARD}
    workflow: sequential
    golden_path:
      steps:
        - {id: e, tool: echo, arguments: {word: hazard}}
      answer: "{{ e.echo }}"
"""

# model problems (all reported together; the bad `strng` schema type is only checked once the model is valid)
BAD = """\
id: tiny
title: Tiny scenario
colour: blue
tools:
  - name: echo
    description: Echo a word back.
    input_schema:
      type: object
      properties:
        word: {type: strng}
    behaviour:
      kind: compute
      result: {echo: "{{ upper(word) }}"}
tasks:
  - id: shout
    prompt: Shout.
    answer: {value: HAZARD}
    workflow: sideways
    golden_path:
      steps:
        - {id: e, tool: echo, arguments: {word: hazard}}
      answer: "{{ e.echo }}"
"""

BAD_SEMANTIC = """\
id: tiny
title: Tiny scenario
tools:
  - name: submit_answer
    description: Clashes with the built-in tool.
    input_schema: {type: object}
    behaviour: {kind: constant, result: 1}
  - name: echo
    description: Echo a word back.
    input_schema: {type: object, properties: {word: {type: string}}}
    output_schema: {type: object, properties: {echo: {type: string}}}
    behaviour:
      kind: table
      rows:
        - {when: {word: a}, result: {echo: 5}}
      default: {result: {echo: x}}
tasks:
  - id: shout
    prompt: Shout.
    answer: {value: HAZARD}
    workflow: sequential
    golden_path:
      steps:
        - {id: e, tool: ghost, arguments: {word: "{{ later.x }}"}}
      answer: "{{ e.echo }}"
  - id: shout
    prompt: Again.
    answer: {value: x}
    workflow: sequential
    golden_path:
      steps:
        - {id: e, tool: echo, arguments: {word: b}}
      answer: "{{ e.echo }}"
"""


def hazard(*args: str, cwd: Path = REPO_ROOT) -> CliRun:
    return run_main(*args, cwd=cwd)


def program(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    """The real program: a scenario's own Python module must be imported by a fresh process, not this one."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_hazard", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )


def stderr_lines(done: CliRun | subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.strip()]


def expected_lines(text: str, file: str, **options: bool) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, file, **options)
    return [str(problem) for problem in caught.value.problems]


# -- validate ------------------------------------------------------------------------------------------------------


def test_validate_good_file(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(GOOD, encoding="utf-8")
    done = hazard("validate", "tiny.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert stderr_lines(done) == []
    assert done.stdout.strip() == "tiny.yaml: ok (tiny: 2 tools, 1 tasks, golden paths reach answers)"


def test_validate_shipped_scenarios() -> None:
    done = hazard("validate", "scenarios")
    assert done.returncode == 0, done.stderr
    assert stderr_lines(done) == []
    assert len(done.stdout.strip().splitlines()) == len(SHIPPED)
    assert all(": ok (" in line for line in done.stdout.strip().splitlines())


@pytest.mark.parametrize("text", [BAD, BAD_SEMANTIC], ids=["model", "semantic"])
def test_validate_bad_file_prints_every_problem_on_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    done = hazard("validate", "bad.yaml", cwd=tmp_path)
    assert done.returncode != 0
    assert done.stdout.strip() == ""
    lines = stderr_lines(done)
    assert lines == expected_lines(text, "bad.yaml")
    assert len(lines) >= 2
    for line in lines:
        match = PROBLEM_LINE.match(line)
        assert match, f"not file:line:col: path: message -> {line!r}"
        assert match["file"] == "bad.yaml"
        assert match["path"], f"no field path in {line!r}"
        assert 1 <= int(match["line"]) <= text.count("\n") + 1


def test_validate_bad_model_file_names_each_field(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(BAD, encoding="utf-8")
    lines = stderr_lines(hazard("validate", "bad.yaml", cwd=tmp_path))
    assert "bad.yaml:3:1: colour: unknown key 'colour'" in lines
    assert any(line.startswith("bad.yaml:18:15: tasks[0].workflow: ") for line in lines), lines


def test_validate_bad_semantic_file_names_each_problem(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(BAD_SEMANTIC, encoding="utf-8")
    lines = stderr_lines(hazard("validate", "bad.yaml", cwd=tmp_path))
    paths = {PROBLEM_LINE.match(line)["path"] for line in lines}
    assert {
        "tools[0].name",
        "tools[1].behaviour.rows[0].result",
        "tasks[0].golden_path.steps[0].tool",
        "tasks[0].golden_path.steps[0].arguments",
        "tasks[1].id",
    } <= paths, lines


def test_validate_yaml_syntax_error(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("id: x\ntools: [a, b\ntasks: []\n", encoding="utf-8")
    done = hazard("validate", "broken.yaml", cwd=tmp_path)
    assert done.returncode != 0
    (line,) = stderr_lines(done)
    match = PROBLEM_LINE.match(line)
    assert match and match["file"] == "broken.yaml" and match["line"] == "3"
    assert "invalid YAML" in match["msg"]


def test_validate_custom_tag_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (tmp_path / "evil.yaml").write_text(
        f"id: evil\ntitle: !!python/object/apply:os.system ['touch {marker}']\n", encoding="utf-8"
    )
    done = hazard("validate", "evil.yaml", cwd=tmp_path)
    assert done.returncode != 0
    (line,) = stderr_lines(done)
    assert line.startswith("evil.yaml:2:8: title: ")
    assert "not allowed" in line
    assert not marker.exists()


def test_validate_good_and_bad_files_together(tmp_path: Path) -> None:
    (tmp_path / "a_good.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b_bad.yaml").write_text(BAD, encoding="utf-8")
    done = hazard("validate", ".", cwd=tmp_path)
    assert done.returncode != 0
    assert "a_good.yaml: ok" in done.stdout
    lines = stderr_lines(done)
    assert lines and all(PROBLEM_LINE.match(line)["file"].endswith("b_bad.yaml") for line in lines)


def test_validate_reads_a_file_named_twice_once(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "tiny.yaml")
    done = hazard("validate", "tiny.yaml", ".", ".", "link.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert stderr_lines(done) == []
    assert done.stdout.strip() == "tiny.yaml: ok (tiny: 2 tools, 1 tasks, golden paths reach answers)"


def test_validate_two_files_with_one_scenario_id(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(GOOD, encoding="utf-8")
    done = hazard("validate", ".", cwd=tmp_path)
    assert done.returncode != 0
    assert stderr_lines(done) == ["b.yaml: id: scenario id 'tiny' is also used by a.yaml"]


def test_validate_missing_path(tmp_path: Path) -> None:
    done = hazard("validate", "nowhere.yaml", cwd=tmp_path)
    assert done.returncode != 0
    (line,) = stderr_lines(done)
    assert "nowhere.yaml" in line and "no such file or directory" in line


def test_validate_directory_without_scenarios(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = hazard("validate", "empty", cwd=tmp_path)
    assert done.returncode != 0
    (line,) = stderr_lines(done)
    assert "no scenario files" in line


def test_validate_non_utf8_file(tmp_path: Path) -> None:
    raw = GOOD.replace("Tiny scenario", "Tiny sc\u00e9nario").encode("latin-1")
    (tmp_path / "latin1.yaml").write_bytes(raw)
    done = hazard("validate", "latin1.yaml", cwd=tmp_path)
    assert done.returncode != 0
    (line,) = stderr_lines(done)
    assert line.startswith("latin1.yaml:")
    assert "not UTF-8" in line
    offset = raw.index("\u00e9".encode("latin-1"))
    assert f"byte {offset}" in line


def test_validate_huge_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    """A file far over the 1 MiB limit must be refused by its size, not read whole into memory first."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as sparse:
        sparse.truncate(4 << 30)  # 4 GiB that take no disk space

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run(
        [sys.executable, "-m", "mcp_hazard", "validate", "huge.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
        preexec_fn=limit_memory,
    )
    assert done.returncode == 2
    (line,) = stderr_lines(done)
    assert line.startswith("huge.yaml:")
    assert "the limit is 1048576" in line


def test_validate_without_paths_is_a_usage_error() -> None:
    done = hazard("validate")
    assert done.returncode == 2
    (line,) = stderr_lines(done)
    assert "required" in line and "paths" in line


def test_validate_python_behaviour_needs_allow_python(tmp_path: Path) -> None:
    (tmp_path / "hazard_cli_helpers.py").write_text(
        "def shout(args):\n    return {'echo': args['word'].upper()}\n", encoding="utf-8"
    )
    text = GOOD.replace(
        '      kind: compute\n      errors:\n        - {if: "len(word) == 0", error: "say something"}\n'
        '      result: {echo: "{{ upper(word) }}"}\n',
        '      kind: python\n      function: "hazard_cli_helpers:shout"\n',
    )
    assert "kind: python" in text
    (tmp_path / "py.yaml").write_text(text, encoding="utf-8")
    refused = program("validate", "py.yaml", cwd=tmp_path)
    assert refused.returncode != 0
    (line,) = stderr_lines(refused)
    assert PROBLEM_LINE.match(line)["path"] == "tools[0].behaviour.function"
    assert "--allow-python" in line
    # the module sits next to the scenario file, not in the working directory
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    allowed = program("validate", "--allow-python", str(tmp_path / "py.yaml"), cwd=elsewhere)
    assert allowed.returncode == 0, allowed.stderr
    assert stderr_lines(allowed) == []


# -- schema --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def printed_schema() -> dict:
    done = hazard("schema")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def test_schema_is_a_valid_json_schema(printed_schema: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(printed_schema)
    assert printed_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert printed_schema["type"] == "object"
    assert {"id", "title", "tools", "tasks"} <= set(printed_schema["required"])


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_scenario_validates_against_the_schema(printed_schema: dict, path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(printed_schema).iter_errors(document), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def test_schema_accepts_the_test_scenario_and_rejects_unknown_keys(printed_schema: dict) -> None:
    validator = jsonschema.Draft202012Validator(printed_schema)
    good = yaml.safe_load(GOOD)
    assert not list(validator.iter_errors(good))
    bad = yaml.safe_load(GOOD)
    bad["tools"][0]["colour"] = "blue"
    bad["tasks"][0]["workflow"] = "sideways"
    bad["tools"][1]["behaviour"]["kind"] = "magic"
    paths = {tuple(e.absolute_path)[:3] for e in validator.iter_errors(bad)}
    assert ("tools", 0) in {p[:2] for p in paths}
    assert ("tasks", 0, "workflow") in paths
    assert ("tools", 1, "behaviour") in paths


def test_schema_uses_the_yaml_spelling_of_guard_conditions(printed_schema: dict) -> None:
    validator = jsonschema.Draft202012Validator(printed_schema)
    document = yaml.safe_load(GOOD)
    assert "if" in document["tools"][0]["behaviour"]["errors"][0]
    assert not list(validator.iter_errors(document))
    document["tools"][0]["behaviour"]["errors"][0] = {"if_": "true", "error": "x"}
    assert list(validator.iter_errors(document))

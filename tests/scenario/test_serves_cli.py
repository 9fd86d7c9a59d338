"""`serves:` with the fields that carry each fact, and did-you-mean for misspelt names, as `mcp-hazard validate`
reports them: `main()` on real files, one line per problem, exit 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CliRun, run_main

from mcp_hazard.hazards import REGISTRY
from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.serves import step_stand_ins

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<path>[\w.\[\]-]+): (?P<msg>\S.*)$")

# Two fare tools: get_fare carries the fare and the class, the archive only the fare (in cents).
FARES = """\
id: fares
title: Fares
tools:
  - name: get_fare
    description: Fare and fare class of a flight.
    input_schema: {type: object, properties: {flight_id: {type: string}}, required: [flight_id]}
    output_schema:
      type: object
      properties: {price_eur: {type: number}, fare_class: {type: string}}
    serves: {flight_fare: price_eur, fare_class: fare_class}
    behaviour:
      kind: table
      rows: [{when: {flight_id: AU-1}, result: {price_eur: 189.0, fare_class: Flex}}]
      default: {error: "no such flight"}
  - name: fare_archive
    description: Archived fare of a flight, in cents.
    input_schema: {type: object, properties: {flight_id: {type: string}}, required: [flight_id]}
    serves: {flight_fare: [fare_cents]}
    behaviour:
      kind: table
      rows: [{when: {flight_id: AU-1}, result: {flight_id: AU-1, fare_cents: 18900, lines: [{cents: 1}]}}]
      default: {error: "not archived"}
tasks:
  - id: price
    prompt: What does flight AU-1 cost in euros?
    answer: {value: 189, match: numeric}
    workflow: sequential
    golden_path:
      steps: [{id: fare, tool: get_fare, arguments: {flight_id: AU-1}}]
      answer: "{{ fare.price_eur }}"
  - id: class
    prompt: Which fare class is flight AU-1 sold in?
    answer: {value: Flex, match: case_insensitive}
    workflow: sequential
    golden_path:
      steps: [{id: fare, tool: get_fare, arguments: {flight_id: AU-1}}]
      answer: "{{ fare.fare_class }}"
"""


def validate(tmp_path: Path, text: str) -> CliRun:
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    return run_main("validate", "s.yaml", cwd=tmp_path)


def problems(done: CliRun) -> list[str]:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert lines and all(LINE.match(line) for line in lines), lines
    return lines


def test_fields_that_carry_a_fact_decide_what_stands_in(tmp_path: Path) -> None:
    done = validate(tmp_path, FARES)
    assert done.returncode == 0, done.stderr
    scenario = load_scenario(tmp_path / "s.yaml").model
    price, fare_class = (scenario.task(t) for t in ("price", "class"))
    assert price is not None and fare_class is not None
    assert step_stand_ins(scenario, price) == [["fare_archive"]]  # the archive's cents carry the fare
    assert step_stand_ins(scenario, fare_class) == [[]]  # it carries no fare class


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # a field the output schema does not declare, with the nearest one offered
        (
            "serves: {flight_fare: price_eur,",
            "serves: {flight_fare: price_euro,",
            "s.yaml:10:27: tools[0].serves.flight_fare: 'price_euro' is not a field of the output of 'get_fare' "
            "(did you mean 'price_eur'?); its output_schema has fare_class, price_eur",
        ),
        # no output schema: checked against every result the table gives
        (
            "serves: {flight_fare: [fare_cents]}",
            "serves: {flight_fare: [fare_cent]}",
            "s.yaml:18:28: tools[1].serves.flight_fare[0]: 'fare_cent' is not a field of the output of 'fare_archive' "
            "(did you mean 'fare_cents'?); behaviour.rows[0].result has fare_cents, flight_id, lines",
        ),
        # dotted through a list to its items
        (
            "serves: {flight_fare: [fare_cents]}",
            "serves: {flight_fare: [lines.cent]}",
            "s.yaml:18:28: tools[1].serves.flight_fare[0]: 'lines.cent' is not a field of the output of 'fare_archive' "
            "at 'lines' (did you mean 'cents'?); behaviour.rows[0].result has cents",
        ),
        # a fact the archive claims but its output cannot carry
        (
            "serves: {flight_fare: [fare_cents]}",
            "serves: {flight_fare: [fare_cents], fare_class: fare_class}",
            "s.yaml:18:53: tools[1].serves.fare_class: 'fare_class' is not a field of the output of 'fare_archive' "
            "(did you mean 'fare_cents'?); behaviour.rows[0].result has fare_cents, flight_id, lines",
        ),
        (
            "serves: {flight_fare: [fare_cents]}",
            "serves: flight_fare",
            "s.yaml:18:13: tools[1].serves: give a list of facts, or a mapping of each fact to the output field(s) "
            "that carry it",
        ),
    ],
    ids=["schema", "results", "nested", "claimed", "shape"],
)
def test_a_serves_field_the_output_lacks_is_one_line(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert old in FARES
    assert problems(validate(tmp_path, FARES.replace(old, new))) == [expected]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("steps: [{id: fare, tool: get_fare,", "steps: [{id: fare, tool: get_fair,",
         "s.yaml:29:32: tasks[0].golden_path.steps[0].tool: no tool named 'get_fair' in this scenario "
         "(did you mean 'get_fare'?)"),
        ("    workflow: sequential\n    golden_path:", "    workflow: sequential\n    tools: [get_fare, fare_archiv]\n"
         "    golden_path:",
         "s.yaml:28:23: tasks[0].tools[1]: no tool named 'fare_archiv' in this scenario "
         "(did you mean 'fare_archive'?)"),
        ("    serves: {flight_fare: price_eur, fare_class: fare_class}\n",
         "    serves: {flight_fare: price_eur, fare_class: fare_class}\n"
         "    fallbacks: [{tool: fare_archiv, arguments: {flight_id: \"{{ flight_id }}\"}}]\n",
         "s.yaml:11:24: tools[0].fallbacks[0].tool: no tool named 'fare_archiv' in this scenario "
         "(did you mean 'fare_archive'?)"),
        ("    serves: {flight_fare: price_eur, fare_class: fare_class}\n",
         "    serves: {flight_fare: price_eur, fare_class: fare_class}\n"
         "    hazards: [{kind: transient_error, tools: [get_fair]}]\n",
         "s.yaml:11:15: tools[0].hazards[0]: no tool named 'get_fair' in scenario 'fares' (did you mean 'get_fare'?)"),
        ("    answer: {value: 189, match: numeric}\n",
         "    answer: {value: 189, match: numeric}\n    hazards: [{kind: transient_eror}]\n",
         "s.yaml:27:22: tasks[0].hazards[0].kind: unknown kind 'transient_eror' (did you mean 'transient_error'?); "
         f"known kinds: {', '.join(sorted(REGISTRY))}"),
        ("    behaviour:\n      kind: table\n      rows: [{when: {flight_id: AU-1}, result: {price_eur",
         "    behaviour:\n      kind: tabel\n      rows: [{when: {flight_id: AU-1}, result: {price_eur",
         "s.yaml:12:13: tools[0].behaviour.kind: unknown kind 'tabel' (did you mean 'table'?); expected 'table', "
         "'constant', 'compute', 'python'"),
        ("rows: [{when: {flight_id: AU-1}, result: {price_eur", "rows: [{when: {flight: AU-1}, result: {price_eur",
         "s.yaml:13:30: tools[0].behaviour.rows[0].when.flight: 'flight' is not an argument of 'get_fare' "
         "(did you mean 'flight_id'?)"),
        ('answer: "{{ fare.price_eur }}"', 'answer: "{{ fair.price_eur }}"',
         "s.yaml:30:15: tasks[0].golden_path.answer: refers to ['fair'], which are not steps (did you mean 'fare'?)"),
        ("workflow: sequential\n    golden_path:\n      steps: [{id: fare, tool: get_fare, arguments: {flight_id: "
         "AU-1}}]\n      answer: \"{{ fare.price_eur }}\"",
         "workflow: sequental\n    golden_path:\n      steps: [{id: fare, tool: get_fare, arguments: {flight_id: "
         "AU-1}}]\n      answer: \"{{ fare.price_eur }}\"",
         "s.yaml:27:15: tasks[0].workflow: \"sequental\" is not allowed (did you mean 'sequential'?); expected "
         "'sequential', 'parallel' or 'mixed'"),
    ],
    ids=["golden-step", "task-tools", "fallback", "hazard-tools", "hazard-kind", "behaviour-kind", "when", "answer",
         "workflow"],
)  # fmt: skip
def test_a_misspelt_name_gets_a_suggestion(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert FARES.count(old) >= 1
    assert problems(validate(tmp_path, FARES.replace(old, new, 1))) == [expected]


def test_shipped_files_name_the_fields_that_carry_shared_facts() -> None:
    """Where two shipped tools share a fact, each names the fields that carry it; travel's archive has no fare
    class, so it stands in for get_fare on fare-in-dollars and not on fare-class."""
    travel = load_scenario(ROOT / "scenarios" / "travel.yaml").model
    by_task = {t.id: step_stand_ins(travel, t) for t in travel.tasks}
    assert by_task["fare-in-dollars"][0] == ["fare_archive_lookup"]
    assert by_task["fare-class"] == [[]]
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        scenario = load_scenario(path).model
        facts = [fact for tool in scenario.tools for fact in tool.serves]
        for tool in scenario.tools:
            shared = [fact for fact in tool.serves if facts.count(fact) > 1]
            assert not shared or isinstance(tool.serves, dict), (path.name, tool.name)


def test_a_misspelt_argument_of_a_replacement_gets_a_suggestion(tmp_path: Path) -> None:
    serves = "    serves: {flight_fare: price_eur, fare_class: fare_class}\n"
    replacement = (
        "    replacement:\n      name: fare_of\n"
        "      input_schema: {type: object, properties: {flight: {type: string}}, required: [flight]}\n"
        "      arguments: {flight_idd: flight}\n"
    )
    lines = problems(validate(tmp_path, FARES.replace(serves, serves + replacement, 1)))
    assert (
        "s.yaml:14:19: tools[0].replacement.arguments.flight_idd: 'flight_idd' is not an argument of 'get_fare' "
        "(did you mean 'flight_id'?)"
    ) in lines

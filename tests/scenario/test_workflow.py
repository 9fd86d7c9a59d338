"""`workflow` is derived from the golden path's data dependencies, and `validate` refuses a label that disagrees:
hand-made golden paths, one per kind and the edge cases, and the refusal as the CLI prints it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_hazard.cli import main
from mcp_hazard.scenario.models import Task
from mcp_hazard.scenario.workflow import derive_workflow, step_dependencies


def task(steps: list[tuple[str, dict[str, Any]]], workflow: str = "sequential") -> Task:
    return Task.model_validate({
        "id": "t", "prompt": "p", "answer": {"value": 1}, "workflow": workflow,
        "golden_path": {"steps": [{"id": i, "tool": "x", "arguments": a} for i, a in steps], "answer": "{{ 1 }}"},
    })  # fmt: skip


CASES = {
    # one step: nothing could run beside it
    "single": ([("a", {"q": 1})], "sequential"),
    # a chain: each step uses the one before
    "chain": ([("a", {}), ("b", {"x": "{{ a.id }}"}), ("c", {"y": "{{ b.id }}"})], "sequential"),
    # a chain with a shortcut: c uses a and b, b uses a; still a total order
    "chain-with-shortcut": ([("a", {}), ("b", {"x": "{{ a.id }}"}), ("c", {"y": "{{ a.v + b.v }}"})], "sequential"),
    # independent calls
    "parallel-two": ([("a", {"id": 1}), ("b", {"id": 2})], "parallel"),
    "parallel-five": ([(f"s{i}", {"id": i}) for i in range(5)], "parallel"),
    # a fan-out: b and c both use a, but not each other
    "fan-out": ([("a", {}), ("b", {"x": "{{ a.id }}"}), ("c", {"y": "{{ a.id }}"})], "mixed"),
    # a join: c uses a and b, which are independent
    "join": ([("a", {}), ("b", {}), ("c", {"x": "{{ a.v }}", "y": "{{ b.v }}"})], "mixed"),
    # two independent chains
    "two-chains": ([("a", {}), ("b", {"x": "{{ a.id }}"}), ("c", {}), ("d", {"x": "{{ c.id }}"})], "mixed"),
    # a chain plus an unrelated call: some dependency, some independence
    "chain-and-one": ([("a", {}), ("b", {"x": "{{ a.id }}"}), ("c", {"k": 3})], "mixed"),
    # references deep in nested arguments and inside function calls count
    "nested": ([("a", {}), ("b", {"o": {"l": ["{{ min_by(a.items, 'p').id }}"]}})], "sequential"),
    # text that mentions a step without `{{ }}` is not a reference
    "plain-text": ([("a", {}), ("b", {"note": "a.id"})], "parallel"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_derivation(name: str) -> None:
    steps, expected = CASES[name]
    assert derive_workflow(task(steps)) == expected


def test_dependencies_are_positions_of_earlier_steps() -> None:
    t = task([("a", {}), ("b", {"x": "{{ a.id }}"}), ("c", {"y": "{{ a.v }} {{ b.v }}"})])
    assert step_dependencies(t) == [set(), {0}, {0, 1}]


SCENARIO = {
    "id": "wf", "title": "Workflow check",
    "tools": [{"name": "get", "description": "Get.", "input_schema": {"type": "object", "properties": {"k": {}}},
               "behaviour": {"kind": "compute", "result": {"v": "{{ k }}"}}}],
    "tasks": [{"id": "two", "prompt": "Sum?", "answer": {"value": 3, "match": "numeric"}, "workflow": "parallel",
               "golden_path": {"steps": [{"id": "a", "tool": "get", "arguments": {"k": 1}},
                                         {"id": "b", "tool": "get", "arguments": {"k": "{{ a.v + 1 }}"}}],
                               "answer": "{{ a.v + b.v }}"}}],
}  # fmt: skip


def test_validate_refuses_a_label_that_disagrees(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(yaml.safe_dump(SCENARIO, sort_keys=False), encoding="utf-8")
    line, col = next((n, text.index("parallel") + 1) for n, text in enumerate(path.read_text().splitlines(), 1)
                     if "workflow:" in text)  # fmt: skip
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"{path}:{line}:{col}: tasks[0].workflow: declared 'parallel' but the golden path is 'sequential' (b uses a)"
    ]


def test_validate_accepts_the_derived_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {**SCENARIO, "tasks": [{**SCENARIO["tasks"][0], "workflow": "sequential"}]}  # type: ignore[dict-item]
    path = tmp_path / "wf.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    assert "ok (wf: 1 tools, 1 tasks" in capsys.readouterr().out

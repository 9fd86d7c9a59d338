"""Load scenario files: parse safely, validate strictly, check references, and prove each golden path works."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mcp_hazard.errors import Problem, ScenarioError, UserError
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.arguments import argument_problem, describe_value, schema_problem
from mcp_hazard.scenario.behaviours import BehaviourFault, PythonNotAllowed, load_python_function, run_behaviour
from mcp_hazard.scenario.expressions import (
    ExpressionError,
    parse_expression,
    referenced_names,
    render,
    template_expressions,
)
from mcp_hazard.scenario.models import (
    RESERVED_TOOL_NAMES,
    ComputeBehaviour,
    ConstantBehaviour,
    PythonBehaviour,
    Scenario,
    TableBehaviour,
    Task,
    ToolSpec,
)
from mcp_hazard.scenario.patterns import pattern_problem, schema_patterns, uses_keyword
from mcp_hazard.scenario.replacement import replacement_problems
from mcp_hazard.scenario.yaml_source import MAX_FILE_BYTES, Path, Positions, format_path, parse_yaml

SCENARIO_SUFFIXES = (".yaml", ".yml")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario plus where it came from; the hash lets a trace prove which file it ran."""

    model: Scenario
    path: str
    sha256: str

    @property
    def id(self) -> str:
        return self.model.id


@dataclass(frozen=True)
class GoldenRun:
    """The golden path executed against the behaviours: each step's arguments and result, and the final answer."""

    steps: list[tuple[str, dict[str, Any], Any]]
    answer: Any


class Problems:
    """Problems found in one file, each placed at the line and column of the field it is about."""

    def __init__(self, file: str, positions: Positions) -> None:
        self.file, self.positions, self.items = file, positions, []  # type: ignore[var-annotated]

    def add(self, path: Path, message: str, *, at_key: bool = False) -> None:
        where = self.positions.locate(path, prefer_key=at_key)
        line, col = where if where else (None, None)
        problem = Problem(self.file, line, col, format_path(path), message)
        if problem not in self.items:  # a tool's hazard checked once per task would repeat itself
            self.items.append(problem)


def _data_path(loc: tuple[Any, ...], data: Any) -> Path:
    """Turn a pydantic error location into a path through the data, skipping union tags that are not keys."""
    path: list[str | int] = []
    node = data
    for part in loc:
        in_map = isinstance(node, dict) and part in node
        if in_map or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            path.append(part)
            node = node[part]
    return tuple(path)


def _pydantic_message(error: Any, field: str | int) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown key {field!r}"
    if kind == "missing":
        return f"missing required field {field!r}"
    if kind == "literal_error":
        return f"{describe_value(error.get('input'))} is not allowed; expected {error['ctx']['expected']}"
    if kind == "union_tag_invalid":
        return f"unknown kind {error['ctx']['tag']!r}; expected {error['ctx']['expected_tags']}"
    if kind == "union_tag_not_found":
        return f"missing {error['ctx']['discriminator'].strip(chr(39))!r}; say which kind of behaviour this is"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    if "input" in error and kind.endswith("_type"):
        message += f", got {describe_value(error['input'])}"
    return message


def _validate_model(data: Any, problems: Problems) -> Scenario | None:
    return validate_model(Scenario, data, problems)


def validate_model(model: type[M], data: Any, problems: Problems) -> M | None:
    """`model` validated from file data, or None with every pydantic error added to `problems` at its place."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            path = _data_path(loc, data)
            field = loc[-1] if loc else ""
            problems.add(path, _pydantic_message(error, field), at_key=error["type"] == "extra_forbidden")
        return None


def _check_expressions(template: Any, path: Path, problems: Problems) -> None:
    for source in template_expressions(template):
        _check_expression(source, path, problems)


def _check_expression(source: str, path: Path, problems: Problems) -> None:
    try:
        parse_expression(source)
    except ExpressionError as exc:
        problems.add(path, str(exc))


def _check_tool(scenario: Scenario, tool: ToolSpec, path: Path, problems: Problems, allow_python: bool) -> None:
    if tool.name in RESERVED_TOOL_NAMES:
        problems.add((*path, "name"), f"tool name {tool.name!r} is reserved by mcp-hazard")
    for key in ("input_schema", "output_schema"):
        schema = getattr(tool, key)
        if schema is None:
            continue
        problem = schema_problem(schema)
        if problem:
            problems.add((*path, key), problem)
        elif schema.get("type") != "object":
            problems.add((*path, key), "the schema's type must be 'object'")
        else:
            check_patterns(schema, (*path, key), problems)
    for i, fallback in enumerate(tool.fallbacks):
        fpath = (*path, "fallbacks", i)
        other = scenario.tool(fallback.tool)
        if other is None:
            problems.add((*fpath, "tool"), f"no tool named {fallback.tool!r} in this scenario")
            continue
        if not set(other.serves) & set(tool.serves):
            problems.add((*fpath, "tool"), f"{fallback.tool!r} serves no fact that {tool.name!r} serves ('serves:')")
        own = set((tool.input_schema.get("properties") or {}).keys()) | {"args"}
        for source in template_expressions(fallback.arguments):
            try:
                unknown = referenced_names(source) - own
            except ExpressionError as exc:
                problems.add((*fpath, "arguments"), str(exc))
                continue
            if unknown:
                problems.add(
                    (*fpath, "arguments"), f"refers to {sorted(unknown)}, which are not arguments of {tool.name!r}"
                )
    behaviour, bpath = tool.behaviour, (*path, "behaviour")
    properties = set((tool.input_schema.get("properties") or {}).keys())
    if isinstance(behaviour, TableBehaviour):
        for i, row in enumerate(behaviour.rows):
            for key in row.when:
                if key not in properties:
                    problems.add((*bpath, "rows", i, "when", key), f"{key!r} is not an argument of {tool.name!r}")
            _check_expressions(row.result, (*bpath, "rows", i, "result"), problems)
            _check_expressions(row.error, (*bpath, "rows", i, "error"), problems)
            _check_static_result(tool, row.result, row.error, (*bpath, "rows", i, "result"), problems)
        _check_expressions(behaviour.default.result, (*bpath, "default"), problems)
        _check_expressions(behaviour.default.error, (*bpath, "default", "error"), problems)
        _check_static_result(tool, behaviour.default.result, behaviour.default.error, (*bpath, "default"), problems)
    elif isinstance(behaviour, ConstantBehaviour):
        _check_expressions(behaviour.result, (*bpath, "result"), problems)
        _check_expressions(behaviour.error, (*bpath, "error"), problems)
        _check_static_result(tool, behaviour.result, behaviour.error, (*bpath, "result"), problems)
    elif isinstance(behaviour, ComputeBehaviour):
        for name, source in behaviour.let.items():
            _check_expression(source, (*bpath, "let", name), problems)
        for i, guard in enumerate(behaviour.errors):
            _check_expression(guard.if_, (*bpath, "errors", i, "if"), problems)
            _check_expressions(guard.error, (*bpath, "errors", i, "error"), problems)
        _check_expressions(behaviour.result, (*bpath, "result"), problems)
    elif isinstance(behaviour, PythonBehaviour):
        if not allow_python:
            problems.add((*bpath, "function"), "runs Python code; pass --allow-python if you trust this scenario file")
        else:
            try:
                load_python_function(behaviour.function)
            except UserError as exc:
                problems.add((*bpath, "function"), str(exc).split(": ", 1)[-1])


def check_patterns(schema: Any, path: Path, problems: Problems) -> None:
    """Every regex in a schema must compile with RE2, which matches in linear time (patterns.py): a pattern Python's
    `re` would accept but RE2 refuses (a backreference, a lookaround) is an error here, not a stall at call time."""
    for where, pattern, is_key in schema_patterns(schema, path):
        problem = pattern_problem(pattern)
        if problem:
            problems.add(where, problem, at_key=is_key)
    if uses_keyword(schema, "unevaluatedProperties") and uses_keyword(schema, "patternProperties"):
        problems.add(
            path,
            "unevaluatedProperties together with patternProperties is not supported: the validator would match "
            "those patterns with a backtracking regex engine; use additionalProperties instead",
        )


def _check_static_result(tool: ToolSpec, result: Any, error: str | None, path: Path, problems: Problems) -> None:
    if error is not None or tool.output_schema is None or template_expressions(result):
        return
    if not isinstance(result, dict):
        problems.add(path, "the tool declares an output_schema, so its results must be objects")
        return
    problem = argument_problem(tool.output_schema, result)
    if problem:
        problems.add(path, "result does not match output_schema: " + problem.replace("argument", "field"))


def _check_task(scenario: Scenario, task: Task, path: Path, problems: Problems) -> bool:
    """Reference checks; returns False when the golden path cannot even be attempted."""
    ok = True
    names = {tool.name for tool in scenario.tools}
    for i, name in enumerate(task.tools or []):
        if name not in names:
            problems.add((*path, "tools", i), f"no tool named {name!r} in this scenario")
            ok = False
    served = {tool.name for tool in scenario.task_tools(task)}
    seen: set[str] = set()
    for i, step in enumerate(task.golden_path.steps):
        spath = (*path, "golden_path", "steps", i)
        if step.id in seen:
            problems.add((*spath, "id"), f"duplicate step id {step.id!r}")
            ok = False
        if step.tool not in names:
            problems.add((*spath, "tool"), f"no tool named {step.tool!r} in this scenario")
            ok = False
        elif step.tool not in served:
            problems.add((*spath, "tool"), f"tool {step.tool!r} is not served for task {task.id!r}")
            ok = False
        for source in template_expressions(step.arguments):
            try:
                unknown = referenced_names(source) - seen
            except ExpressionError as exc:
                problems.add((*spath, "arguments"), str(exc))
                ok = False
                continue
            if unknown:
                problems.add((*spath, "arguments"), f"refers to {sorted(unknown)}, which are not earlier steps")
                ok = False
        seen.add(step.id)
    for source in template_expressions(task.golden_path.answer):
        try:
            unknown = referenced_names(source) - seen
        except ExpressionError as exc:
            problems.add((*path, "golden_path", "answer"), str(exc))
            ok = False
            continue
        if unknown:
            problems.add((*path, "golden_path", "answer"), f"refers to {sorted(unknown)}, which are not steps")
            ok = False
    return ok


def run_golden_path(scenario: Scenario, task: Task, *, allow_python: bool = False) -> GoldenRun:
    """Execute the golden path against the behaviours; raise GoldenPathError naming the step that fails."""
    results: dict[str, Any] = {}
    steps: list[tuple[str, dict[str, Any], Any]] = []
    for index, step in enumerate(task.golden_path.steps):
        tool = scenario.tool(step.tool)
        if tool is None:
            raise GoldenPathError(index, f"no tool named {step.tool!r}")
        try:
            arguments = render(step.arguments, results)
        except ExpressionError as exc:
            raise GoldenPathError(index, f"arguments: {exc}") from None
        problem = argument_problem(tool.input_schema, arguments)
        if problem:
            raise GoldenPathError(index, f"{step.tool}: {problem}")
        try:
            outcome = run_behaviour(tool, arguments, allow_python=allow_python)
        except BehaviourFault as exc:
            raise GoldenPathError(index, f"{step.tool} behaviour failed: {exc}") from None
        except PythonNotAllowed:
            raise
        except Exception as exc:  # a python behaviour may raise anything; it is the author's bug, reported here
            raise GoldenPathError(index, f"{step.tool} behaviour raised {type(exc).__name__}: {exc}") from None
        if not outcome.ok:
            raise GoldenPathError(index, f"{step.tool} returned an error: {outcome.error}")
        if tool.output_schema is not None:
            bad = argument_problem(tool.output_schema, outcome.result)
            if bad:
                raise GoldenPathError(index, f"{step.tool} result does not match output_schema: {bad}")
        results[step.id] = outcome.result
        steps.append((step.id, arguments, outcome.result))
    try:
        answer = render(task.golden_path.answer, results)
    except ExpressionError as exc:
        raise GoldenPathError(None, f"answer: {exc}") from None
    return GoldenRun(steps=steps, answer=answer)


class GoldenPathError(Exception):
    def __init__(self, step: int | None, message: str) -> None:
        self.step = step
        super().__init__(message)


def _check_golden(scenario: Scenario, task: Task, path: Path, problems: Problems, allow_python: bool) -> None:
    try:
        run = run_golden_path(scenario, task, allow_python=allow_python)
    except PythonNotAllowed:
        return  # already reported on the tool
    except GoldenPathError as exc:
        where = (*path, "golden_path", "steps", exc.step) if exc.step is not None else (*path, "golden_path", "answer")
        problems.add(where, f"golden path does not work: {exc}")
        return
    if not answer_matches(task.answer, run.answer):
        problems.add(
            (*path, "golden_path", "answer"),
            f"golden path yields {describe_value(run.answer)}, which does not match the canonical answer "
            f"{describe_value(task.answer.value)} (rule {task.answer.match})",
        )


def parse_scenario(text: str, file: str, *, allow_python: bool = False) -> Scenario:
    """Validate scenario text completely; raise ScenarioError with every problem found."""
    data, positions = parse_yaml(text, file)
    problems = Problems(file, positions)
    if not isinstance(data, dict):
        problems.add((), "a scenario file must be a mapping with id, title, tools and tasks")
        raise ScenarioError(problems.items)
    scenario = _validate_model(data, problems)
    if scenario is None:
        raise ScenarioError(problems.items)
    seen_tools: set[str] = set()
    for i, tool in enumerate(scenario.tools):
        if tool.name in seen_tools:
            problems.add(("tools", i, "name"), f"duplicate tool name {tool.name!r}")
        seen_tools.add(tool.name)
        _check_tool(scenario, tool, ("tools", i), problems, allow_python)
    taken = {tool.name for tool in scenario.tools} | RESERVED_TOOL_NAMES
    for i, tool in enumerate(scenario.tools):
        for where, message, at_key in replacement_problems(tool, taken):
            problems.add(("tools", i, "replacement", *where), message, at_key=at_key)
        if tool.replacement is not None and isinstance(tool.replacement.input_schema, dict):
            check_patterns(tool.replacement.input_schema, ("tools", i, "replacement", "input_schema"), problems)
        if tool.replacement is not None:
            taken.add(tool.replacement.name)
    seen_tasks: set[str] = set()
    tools_ok = not problems.items
    for i, task in enumerate(scenario.tasks):
        if task.id in seen_tasks:
            problems.add(("tasks", i, "id"), f"duplicate task id {task.id!r}")
        seen_tasks.add(task.id)
        if _check_task(scenario, task, ("tasks", i), problems) and tools_ok:
            _check_golden(scenario, task, ("tasks", i), problems, allow_python)
    if not problems.items:
        _check_declared_hazards(scenario, problems)
    if problems.items:
        raise ScenarioError(problems.items)
    return scenario


def _check_declared_hazards(scenario: Scenario, problems: Problems) -> None:
    """Hazards a file offers must be valid for every task they apply to: unknown kinds, tools or params are errors."""
    from mcp_hazard.hazards.build import check_spec

    for i, task in enumerate(scenario.tasks):
        for j, spec in enumerate(task.hazards):
            try:
                check_spec(spec, j, scenario, task)
            except UserError as exc:
                problems.add(("tasks", i, "hazards", j), str(exc).split(": ", 1)[-1])
        served = {tool.name for tool in scenario.task_tools(task)}
        for k, tool in enumerate(scenario.tools):
            if tool.name not in served:
                continue
            for j, spec in enumerate(tool.hazards):
                try:
                    check_spec(
                        spec if spec.tools else spec.model_copy(update={"tools": [tool.name]}), j, scenario, task
                    )
                except UserError as exc:
                    problems.add(("tools", k, "hazards", j), str(exc).split(": ", 1)[-1])


def read_source(path: str | FsPath) -> tuple[bytes, str]:
    """A user's file as bytes (for its hash) and text, never more than the size limit; one-line errors otherwise."""
    file = str(path)
    try:
        with open(path, "rb") as handle:  # never read more than the limit, however large the file
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError([Problem(file, None, None, "", f"cannot read file: {exc.strerror or exc}")]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(
            [Problem(file, None, None, "", f"file is larger than the limit; the limit is {MAX_FILE_BYTES} bytes")]
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError([Problem(file, None, None, "", f"not UTF-8 text (byte {exc.start})")]) from None
    return raw, text


def load_scenario(path: str | FsPath, *, allow_python: bool = False) -> LoadedScenario:
    file = str(path)
    raw, text = read_source(path)
    if allow_python:  # modules named by `python` behaviours may sit next to the scenario file
        folder = str(FsPath(path).resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
    model = parse_scenario(text, file, allow_python=allow_python)
    return LoadedScenario(model=model, path=file, sha256=hashlib.sha256(raw).hexdigest())


def scenario_files(paths: Iterable[str | FsPath]) -> list[FsPath]:
    """The scenario files named by `paths`, directories expanded (sorted, so runs are repeatable)."""
    files: list[FsPath] = []
    for item in paths:
        path = FsPath(item)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in SCENARIO_SUFFIXES and p.is_file()))
        elif path.exists():
            files.append(path)
        else:
            raise UserError(f"{item}: no such file or directory")
    if not files:
        raise UserError(f"no scenario files (*.yaml, *.yml) in {', '.join(map(str, paths))}")
    return files


def load_scenarios(paths: Iterable[str | FsPath], *, allow_python: bool = False) -> list[LoadedScenario]:
    """Load every scenario under `paths`; collect all problems of all files before raising."""
    loaded: list[LoadedScenario] = []
    problems: list[Problem] = []
    for file in scenario_files(paths):
        try:
            loaded.append(load_scenario(file, allow_python=allow_python))
        except ScenarioError as exc:
            problems.extend(exc.problems)
    ids: dict[str, str] = {}
    for scenario in loaded:
        if scenario.id in ids:
            problems.append(
                Problem(
                    scenario.path, None, None, "id", f"scenario id {scenario.id!r} is also used by {ids[scenario.id]}"
                )
            )
        ids[scenario.id] = scenario.path
    if problems:
        raise ScenarioError(problems)
    return loaded

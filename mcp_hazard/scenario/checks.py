"""Check a scenario file on its own: YAML, the model, tool and task references, schemas and their patterns, static
results, expressions, and that every golden path works.

The hazards a file declares need the hazard kinds to be checked, which sit above the scenario floor: the complete
loader (mcp_hazard/load.py) adds their problems to these.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.errors import ScenarioError, UserError
from mcp_hazard.scenario.arguments import argument_problem, schema_problem
from mcp_hazard.scenario.behaviours import load_python_function
from mcp_hazard.scenario.expressions import (
    MAX_LET_DEPTH,
    ExpressionError,
    deepest_let,
    parse_expression,
    referenced_names,
    template_expressions,
)
from mcp_hazard.scenario.golden_check import check_golden
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
from mcp_hazard.scenario.problems import Problems, validate_model
from mcp_hazard.scenario.replacement import replacement_problems
from mcp_hazard.scenario.schema_refs import ref_problems
from mcp_hazard.scenario.serves import serves_problems
from mcp_hazard.scenario.workflow import workflow_problem
from mcp_hazard.scenario.yaml_source import Path, parse_yaml
from mcp_hazard.suggest import did_you_mean


def _validate_model(data: Any, problems: Problems) -> Scenario | None:
    return validate_model(Scenario, data, problems)


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
    usable = _check_schemas(tool, path, problems)
    for i, fallback in enumerate(tool.fallbacks):
        _check_fallback(scenario, tool, fallback, (*path, "fallbacks", i), problems)
    for where, message in serves_problems(tool):
        problems.add((*path, *where), message)
    _check_checked_by(scenario, tool, path, problems)
    _check_behaviour(tool, (*path, "behaviour"), problems, allow_python, usable)


def _check_schemas(tool: ToolSpec, path: Path, problems: Problems) -> bool:
    """Check the input and output schemas; True when the output schema can judge a static result."""
    usable = True
    for key in ("input_schema", "output_schema"):
        schema = getattr(tool, key)
        if schema is None:
            continue
        problem = schema_problem(schema)
        before = len(problems.items)
        if problem:
            problems.add((*path, key), problem)
        elif schema.get("type") != "object":
            problems.add((*path, key), "the schema's type must be 'object'")
        else:
            check_patterns(schema, (*path, key), problems)
        usable = key == "input_schema" or len(problems.items) == before
    return usable


def _check_fallback(scenario: Scenario, tool: ToolSpec, fallback: Any, fpath: Path, problems: Problems) -> None:
    """A fallback names a tool that serves a fact this one serves, with arguments made of this call's arguments."""
    other = scenario.tool(fallback.tool)
    if other is None:
        problems.add((*fpath, "tool"), _no_tool(scenario, fallback.tool))
        return
    if not set(other.serves) & set(tool.serves):
        problems.add((*fpath, "tool"), f"{fallback.tool!r} serves no fact that {tool.name!r} serves ('serves:')")
    own = _argument_names(tool) | {"args"}
    for source in template_expressions(fallback.arguments):
        try:
            unknown = referenced_names(source) - own
        except ExpressionError as exc:
            problems.add((*fpath, "arguments"), str(exc))
            continue
        if unknown:
            problems.add(
                (*fpath, "arguments"),
                f"refers to {sorted(unknown)}, which are not arguments of {tool.name!r}"
                + did_you_mean(min(unknown), own - {"args"}),
            )


def _argument_names(tool: ToolSpec) -> set[str]:
    """The tool's argument names; none where `properties` is not a mapping (a problem `_check_schemas` reports, and
    the other checks go on past)."""
    properties = tool.input_schema.get("properties")
    return set(properties) if isinstance(properties, dict) else set()


def _check_checked_by(scenario: Scenario, tool: ToolSpec, path: Path, problems: Problems) -> None:
    for i, check in enumerate(tool.checked_by):
        checker = scenario.tool(check)
        if tool.effect != "write":
            problems.add((*path, "checked_by"), "only a write (effect: write) has an effect to check")
            break
        if checker is None:
            problems.add((*path, "checked_by", i), _no_tool(scenario, check))
        elif checker.effect == "write":
            problems.add((*path, "checked_by", i), f"{check!r} is a write: a check must only read")


def _check_behaviour(tool: ToolSpec, bpath: Path, problems: Problems, allow_python: bool, usable: bool) -> None:
    """Expressions parse, table rows match on arguments the tool has, static results fit the output schema (when it
    is `usable`), and Python runs only when allowed."""
    behaviour = tool.behaviour
    if isinstance(behaviour, TableBehaviour):
        properties = _argument_names(tool)
        for i, row in enumerate(behaviour.rows):
            for key in row.when:
                if key not in properties:
                    problems.add(
                        (*bpath, "rows", i, "when", key),
                        f"{key!r} is not an argument of {tool.name!r}{did_you_mean(key, properties)}",
                    )
            _check_outcome(tool, row.result, row.error, (*bpath, "rows", i, "result"), (*bpath, "rows", i, "error"),
                           problems, usable)  # fmt: skip
        default = behaviour.default
        _check_outcome(tool, default.result, default.error, (*bpath, "default"), (*bpath, "default", "error"),
                       problems, usable)  # fmt: skip
    elif isinstance(behaviour, ConstantBehaviour):
        _check_outcome(tool, behaviour.result, behaviour.error, (*bpath, "result"), (*bpath, "error"),
                       problems, usable)  # fmt: skip
    elif isinstance(behaviour, ComputeBehaviour):
        _check_compute(behaviour, bpath, problems)
    elif isinstance(behaviour, PythonBehaviour):
        if not allow_python:
            problems.add((*bpath, "function"), "runs Python code; pass --allow-python if you trust this scenario file")
        else:
            try:
                load_python_function(behaviour.function)
            except UserError as exc:
                problems.add((*bpath, "function"), str(exc).split(": ", 1)[-1])


def _check_outcome(
    tool: ToolSpec, result: Any, error: Any, rpath: Path, epath: Path, problems: Problems, usable: bool
) -> None:
    """A static result and error: their expressions parse, and the result fits the output schema."""
    _check_expressions(result, rpath, problems)
    _check_expressions(error, epath, problems)
    if usable:
        _check_static_result(tool, result, error, rpath, problems)


def _check_compute(behaviour: ComputeBehaviour, bpath: Path, problems: Problems) -> None:
    for name, source in behaviour.let.items():
        _check_expression(source, (*bpath, "let", name), problems)
    deepest = deepest_let(behaviour.let)
    if deepest is not None:
        problems.add(
            (*bpath, "let", deepest),
            f"more than {MAX_LET_DEPTH} `let`s each built on the one before; compute in fewer steps",
        )
    for i, guard in enumerate(behaviour.errors):
        _check_expression(guard.if_, (*bpath, "errors", i, "if"), problems)
        _check_expressions(guard.error, (*bpath, "errors", i, "error"), problems)
    _check_expressions(behaviour.result, (*bpath, "result"), problems)


def check_patterns(schema: Any, path: Path, problems: Problems) -> None:
    """Every regex in a schema must compile with RE2, which matches in linear time (patterns.py): a pattern Python's
    `re` would accept but RE2 refuses (a backreference, a lookaround) is an error here, not a stall at call time.
    Every `$ref` must stay inside the schema, point at a subschema and not loop (schema_refs.py): an error here, not
    a file read, a request or a crash at call time."""
    for where, message in ref_problems(schema):
        problems.add((*path, *where), message)
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


def _no_tool(scenario: Scenario, name: str) -> str:
    return f"no tool named {name!r} in this scenario{did_you_mean(name, (t.name for t in scenario.tools))}"


def _check_task(scenario: Scenario, task: Task, path: Path, problems: Problems) -> bool:
    """Reference checks; returns False when the golden path cannot even be attempted."""
    ok = True
    names = {tool.name for tool in scenario.tools}
    for i, name in enumerate(task.tools or []):
        if name not in names:
            problems.add((*path, "tools", i), _no_tool(scenario, name))
            ok = False
    served = {tool.name for tool in scenario.task_tools(task)}
    seen: set[str] = set()
    for i, step in enumerate(task.golden_path.steps):
        spath = (*path, "golden_path", "steps", i)
        if step.id in seen:
            problems.add((*spath, "id"), f"duplicate step id {step.id!r}")
            ok = False
        if step.tool not in names:
            problems.add((*spath, "tool"), _no_tool(scenario, step.tool))
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
                problems.add(
                    (*spath, "arguments"),
                    f"refers to {sorted(unknown)}, which are not earlier steps{did_you_mean(min(unknown), seen)}",
                )
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
            problems.add(
                (*path, "golden_path", "answer"),
                f"refers to {sorted(unknown)}, which are not steps{did_you_mean(min(unknown), seen)}",
            )
            ok = False
    if ok:
        mismatch = workflow_problem(task)
        if mismatch:
            problems.add((*path, "workflow"), mismatch)
    return ok


def check_scenario(text: str, file: str, *, allow_python: bool = False) -> tuple[Scenario, Problems]:
    """Check scenario text as far as the scenario itself goes: YAML, the model, names and references, patterns and
    the golden paths. Raises ScenarioError when the text is not even a scenario; otherwise returns it with the
    problems found, to which mcp_hazard/load.py adds those of the hazards it declares."""
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
            check_golden(scenario, task, ("tasks", i), problems, allow_python)
    return scenario, problems

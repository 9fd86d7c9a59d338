"""`mcp-hazard validate` proves injected hazards solvable: the shipped scenarios pass under every hazard, a
deliberately unsolvable combination fails naming seed and step, and the checker's own limits hold.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from conftest import CliRun, run_main

from mcp_hazard.commands import hazard_options
from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.hazards import REGISTRY, applicable_tools
from mcp_hazard.hazards.base import fallback_arguments, fallbacks_for
from mcp_hazard.load import load_scenario, load_scenarios
from mcp_hazard.runner.solvability import MAX_ATTEMPTS, check_instance
from mcp_hazard.scenario.behaviours import run_behaviour
from mcp_hazard.scenario.expressions import render
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Scenario, Task

from .support import REPO_ROOT, SCENARIOS_DIR, TRAVEL

TRAVEL_TASKS = ("cheapest-trip", "fare-in-dollars", "two-nights", "fare-class")


def _validate(*args: str) -> CliRun:
    """`mcp-hazard validate ARGS` through `main()` in this process: what it says, not its process."""
    return run_main("validate", *args, cwd=REPO_ROOT)


def test_validate_all_hazards_on_shipped_scenarios() -> None:
    done = _validate(str(SCENARIOS_DIR), "--hazard", "all", "--seeds", "0-4")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.strip().splitlines()
    files = sorted(p.name for p in SCENARIOS_DIR.glob("*.yaml"))
    assert len(lines) == len(files)
    for line, name in zip(lines, files, strict=True):
        # one instance = one (task, seed) under every applicable kind at once
        assert re.search(rf"{re.escape(name)}: ok \(.*, (\d+) hazard instances solvable\)$", line), line


def test_validate_names_seed_and_step_of_an_unsolvable_combination() -> None:
    """Nine transient failures in a row outlast the checker's MAX_ATTEMPTS retries: exit 1, one line per (task,
    seed) naming the seed, the step (1-based) and its tool, and the last error."""
    done = _validate(str(TRAVEL), "--hazard", "transient_error:times=9", "--seeds", "0-1")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 4 * 2  # four travel tasks, two seeds
    pattern = re.compile(
        rf"^{re.escape(str(TRAVEL))}: unsolvable: travel/(?P<task>[a-z-]+): seed (?P<seed>[01]), step 1 "
        rf"\((?P<tool>\w+)\): still failing after {MAX_ATTEMPTS} attempts: Error 503: Service Unavailable\."
    )
    found = set()
    for line in lines:
        match = pattern.match(line)
        assert match, line
        found.add((match["task"], match["seed"], match["tool"]))
    assert ("cheapest-trip", "0", "find_city_code") in found and ("two-nights", "1", "search_hotels") in found
    assert {task for task, _seed, _tool in found} == set(TRAVEL_TASKS)


@pytest.mark.anyio
async def test_max_attempts_is_the_retry_budget(travel: LoadedScenario) -> None:
    task = travel.model.task("fare-class")
    assert task is not None
    fits = Condition(hazards=hazard_options([f"transient_error:times={MAX_ATTEMPTS - 1}"]))
    assert await check_instance(travel, task, fits) is None
    outlasts = Condition(hazards=hazard_options([f"transient_error:times={MAX_ATTEMPTS}"]))
    problem = await check_instance(travel, task, outlasts)
    assert problem is not None and problem.step == 0 and problem.tool == "get_fare" and problem.seed == 0
    assert str(problem).startswith("travel/fare-class: seed 0, step 1 (get_fare): still failing after")


@pytest.mark.anyio
@pytest.mark.parametrize("task_id", TRAVEL_TASKS)
@pytest.mark.parametrize("kind", sorted(REGISTRY))
async def test_check_instance_solves_every_kind_on_travel(kind: str, task_id: str, travel: LoadedScenario) -> None:
    task = travel.model.task(task_id)
    assert task is not None
    if not applicable_tools(REGISTRY[kind], travel.model, task):
        pytest.skip(f"{kind} applies to no tool of {task_id}")
    for seed in range(5):
        condition = Condition(seed=seed, hazards=hazard_options([kind]))
        assert await check_instance(travel, task, condition) is None


@pytest.mark.anyio
@pytest.mark.parametrize("profile", ["strict", "guided"])
async def test_check_instance_solves_all_at_once_on_travel(profile: str, travel: LoadedScenario) -> None:
    for task in travel.model.tasks:
        for seed in range(5):
            condition = Condition(seed=seed, profile=profile, hazards=["all"])  # type: ignore[arg-type]
            assert await check_instance(travel, task, condition) is None, (task.id, seed)


@pytest.mark.anyio
async def test_unsolvable_permanent_error_without_a_fallback_is_caught(travel: LoadedScenario) -> None:
    """find_city_code serves no fact another tool serves: a permanent error there leaves no recovery path."""
    task = travel.model.task("cheapest-trip")
    assert task is not None
    condition = Condition(hazards=hazard_options(["permanent_error:tools=find_city_code"]))
    # Refused when the episode is built, before any agent could meet an instance without a recovery path.
    with pytest.raises(UserError, match="no fallback exists"):
        await check_instance(travel, task, condition)


# -- the fallback must really carry what the task needs ----------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _paths(item, (*prefix, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _paths(item, (*prefix, index))]
    return [(prefix, value)]


def _replay(scenario: Scenario, task: Task, index: int, path: tuple[Any, ...], new: Any) -> Any:
    """The golden path with one leaf of step `index`'s result replaced; the answer it then yields (or the error)."""
    results: dict[str, Any] = {}
    for position, step in enumerate(task.golden_path.steps):
        spec = scenario.tool(step.tool)
        assert spec is not None
        outcome = run_behaviour(spec, render(step.arguments, results))
        if not outcome.ok:
            return ("error", outcome.error)
        value = copy.deepcopy(outcome.result)
        if position == index and path:
            node = value
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = new
        results[step.id] = value
    try:
        return render(task.golden_path.answer, results)
    except Exception as exc:
        return ("error", str(exc))


def _fallback_cases() -> list[Any]:
    cases = []
    for loaded in load_scenarios([SCENARIOS_DIR]):
        for task in loaded.model.tasks:
            applicable = set(applicable_tools(REGISTRY["permanent_error"], loaded.model, task))
            for index, step in enumerate(task.golden_path.steps):
                if step.tool in applicable:
                    cases.append(pytest.param(loaded.path, task.id, index, id=f"{loaded.id}/{task.id}/step{index + 1}"))
    return cases


@pytest.mark.parametrize(("path", "task_id", "index"), _fallback_cases())
def test_permanent_error_fallbacks_carry_the_text_the_answer_needs(path: str, task_id: str, index: int) -> None:
    """Where validate counts a permanent error as solvable by falling back (solvability.py returns the failed
    tool's own true result once any fallback answers), an agent can only recover if the fallback serves what the
    answer depends on. Text leaves are checked (numbers may legitimately come in another unit, euros vs cents).

    BUG (reported): travel/fare-class needs get_fare's `fare_class`; its only fallback, fare_archive_lookup, serves
    flight, fare_cents and currency. `validate --hazard all` (and check_instance) call it solvable; no agent can be."""
    scenario = load_scenario(path).model
    task = scenario.task(task_id)
    assert task is not None
    step = task.golden_path.steps[index]
    spec = scenario.tool(step.tool)
    assert spec is not None
    results: dict[str, Any] = {}
    for earlier in task.golden_path.steps[:index]:
        earlier_spec = scenario.tool(earlier.tool)
        assert earlier_spec is not None
        results[earlier.id] = run_behaviour(earlier_spec, render(earlier.arguments, results)).result
    arguments = render(step.arguments, results)
    own = run_behaviour(spec, arguments).result
    baseline = _replay(scenario, task, index, (), None)
    needed = [
        value
        for leaf, value in _paths(own)
        if isinstance(value, str) and _replay(scenario, task, index, leaf, value + "\u0000changed") != baseline
    ]
    served: set[str] = set()
    for other in fallbacks_for(scenario, task, step.tool):
        mapped = fallback_arguments(scenario, spec, other, arguments)
        other_spec = scenario.tool(other)
        if mapped is None or other_spec is None:
            continue
        outcome = run_behaviour(other_spec, mapped)
        if outcome.ok:
            served |= {str(v).casefold() for _, v in _paths(outcome.result) if isinstance(v, str)}
    missing = [value for value in needed if value.casefold() not in served]
    assert not missing, (
        f"{step.tool} is down for good, the answer needs {missing} from it, and no fallback serves that "
        f"(fallbacks: {fallbacks_for(scenario, task, step.tool)})"
    )

"""Load scenario files completely: everything the scenario floor checks (scenario/checks.py), then the hazards each
file declares, checked against the hazard kinds.

This module sits one floor above the hazards, because checking a declared hazard needs its kind (its parameters, the
tools it applies to); the scenario package below knows only the declaration (scenario/hazard_spec.py). Every problem
is still one line naming `file:line:column` and the field (docs/decisions.md, "Floors").
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from pathlib import Path as FsPath

from mcp_hazard.errors import Problem, ScenarioError, UserError
from mcp_hazard.hazards.instances import check_spec
from mcp_hazard.scenario.checks import check_scenario
from mcp_hazard.scenario.files import LoadedScenario, read_source, scenario_files
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import Scenario
from mcp_hazard.scenario.problems import Problems


def parse_scenario(text: str, file: str, *, allow_python: bool = False) -> Scenario:
    """Validate scenario text completely; raise ScenarioError with every problem found."""
    scenario, problems = check_scenario(text, file, allow_python=allow_python)
    if not problems.items:
        _check_declared_hazards(scenario, problems)
    if problems.items:
        raise ScenarioError(problems.items)
    return scenario


def _check_declared_hazards(scenario: Scenario, problems: Problems) -> None:
    """Hazards a file offers must be valid for every task they apply to: unknown kinds, tools or params are errors."""
    for i, task in enumerate(scenario.tasks):
        for j, spec in enumerate(task.hazards):
            try:
                check_spec(spec, j, scenario, task)
            except UserError as exc:
                _add_spec_problem(problems, ("tasks", i, "hazards", j), spec, exc)
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
                    _add_spec_problem(problems, ("tools", k, "hazards", j), spec, exc)


def _add_spec_problem(problems: Problems, path: tuple[str | int, ...], spec: HazardSpec, exc: UserError) -> None:
    """The hazard's problem at its place in the file, without the command line's "hazard #N (kind): " label, which
    the place says; an unknown kind is named, at the kind."""
    message = str(exc).split(": ", 1)[-1]
    if message.startswith("unknown kind"):
        problems.add((*path, "kind"), f"unknown kind {spec.kind!r}" + message.removeprefix("unknown kind"))
    else:
        problems.add(path, message)


def load_scenario(path: str | FsPath, *, allow_python: bool = False) -> LoadedScenario:
    """One scenario file, checked completely, with its hash (a trace records it to prove which file it ran)."""
    file = str(path)
    raw, text = read_source(path)
    if allow_python:  # modules named by `python` behaviours may sit next to the scenario file
        folder = str(FsPath(path).resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
    model = parse_scenario(text, file, allow_python=allow_python)
    return LoadedScenario(model=model, path=file, sha256=hashlib.sha256(raw).hexdigest())


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

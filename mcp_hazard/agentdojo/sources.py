"""Scenario paths and AgentDojo sources together: what `validate`, `serve`, `run` and `verify` load.

A path argument that starts with `agentdojo:` names suites (source_names.py); any other is a scenario file or folder,
loaded as before. AgentDojo is imported only when a source names it.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp_hazard.agentdojo.source_names import is_source, parse
from mcp_hazard.errors import Problem, ScenarioError
from mcp_hazard.load import load_scenarios
from mcp_hazard.scenario.files import LoadedScenario


def split_sources(paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """(file paths, AgentDojo source names), each in the order given."""
    items = [str(path) for path in paths]
    return [p for p in items if not is_source(p)], [p for p in items if is_source(p)]


def load_named(names: Iterable[str]) -> list[LoadedScenario]:
    """The suites AgentDojo source names mean, each loaded once (`agentdojo:all` and `agentdojo:banking` together
    load banking once)."""
    sources = [source for name in names for source in parse(name)]
    if not sources:
        return []  # scenario files only: the suites' modules stay unimported
    from mcp_hazard.agentdojo.build_suite import load_suite

    return [load_suite(source) for source in dict.fromkeys(sources)]


def load_sources(paths: Iterable[str], *, allow_python: bool = False) -> list[LoadedScenario]:
    """Scenario files (as `load_scenarios` loads them) and AgentDojo suites; two that share an id are one error."""
    files, names = split_sources(paths)
    loaded = load_scenarios(files, allow_python=allow_python) if files else []
    suites = load_named(names)
    seen = {scenario.id: scenario.path for scenario in loaded}
    problems = []
    for suite in suites:
        if suite.id in seen:
            problems.append(Problem(suite.path, None, None, "id", f"scenario id {suite.id!r} is also used by "
                                    f"{seen[suite.id]}; run them separately"))  # fmt: skip
        seen[suite.id] = suite.path
    if problems:
        raise ScenarioError(problems)
    return [*loaded, *suites]

"""Scenario files: the format, safe loading, tool behaviours and answer matching."""

from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.behaviours import BehaviourFault, ToolOutcome, run_behaviour
from mcp_hazard.scenario.load import (
    GoldenPathError,
    GoldenRun,
    LoadedScenario,
    load_scenario,
    load_scenarios,
    parse_scenario,
    run_golden_path,
    scenario_files,
)
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec, scenario_json_schema

__all__ = [
    "BehaviourFault",
    "GoldenPathError",
    "GoldenRun",
    "LoadedScenario",
    "Scenario",
    "Task",
    "ToolOutcome",
    "ToolSpec",
    "answer_matches",
    "load_scenario",
    "load_scenarios",
    "parse_scenario",
    "run_behaviour",
    "run_golden_path",
    "scenario_files",
    "scenario_json_schema",
]

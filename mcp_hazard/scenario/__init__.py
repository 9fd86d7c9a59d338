"""Scenario files: the format, safe parsing and checking, tool behaviours, golden paths and answer matching.

Loading a file completely (`load_scenario`, `load_scenarios`, `parse_scenario`) also checks the hazards it declares,
which needs the hazard kinds one floor up: those functions are in mcp_hazard/load.py.
"""

from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.behaviours import BehaviourFault, ToolOutcome, run_behaviour
from mcp_hazard.scenario.files import LoadedScenario, scenario_files
from mcp_hazard.scenario.golden_check import GoldenPathError, GoldenRun, run_golden_path
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
    "run_behaviour",
    "run_golden_path",
    "scenario_files",
    "scenario_json_schema",
]

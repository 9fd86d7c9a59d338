"""Generated scenarios: contamination-free tool graphs written as scenario files (docs/generator.md).

The command that writes them, `mcp-hazard generate dag`, is in commands/generate.py.
"""

from mcp_hazard.generate.dag import GENERATOR_VERSION, Graph, Knobs, build_graph
from mcp_hazard.generate.graph_scenario import build_scenario, scenario_id
from mcp_hazard.generate.variable_names import POLICIES, Naming
from mcp_hazard.generate.write import file_name, render_scenario, seed_series, write_scenario

__all__ = [
    "GENERATOR_VERSION",
    "POLICIES",
    "Graph",
    "Knobs",
    "Naming",
    "build_graph",
    "build_scenario",
    "file_name",
    "render_scenario",
    "scenario_id",
    "seed_series",
    "write_scenario",
]

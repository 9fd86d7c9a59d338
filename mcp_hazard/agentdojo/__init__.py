"""AgentDojo's suites behind mcp-hazard's hazards (docs/agentdojo.md): `agentdojo:SUITE[@VERSION]` wherever a
scenario path is taken.

Only library.py imports the installed AgentDojo package (the `agentdojo` extra), and only when a source names it;
the rest reads names, facts tables and snapshots, so `score` and `--help` never import it.
"""

from mcp_hazard.agentdojo.names import DEFAULT_VERSION, PREFIX, SUITES, Source, is_source, parse
from mcp_hazard.agentdojo.scenario import AgentDojoScenario, LoadedSuite, is_suite
from mcp_hazard.agentdojo.snapshot import is_snapshot, load_snapshot
from mcp_hazard.agentdojo.sources import load_named, load_sources, split_sources

__all__ = [
    "DEFAULT_VERSION",
    "PREFIX",
    "SUITES",
    "AgentDojoScenario",
    "LoadedSuite",
    "Source",
    "is_snapshot",
    "is_source",
    "is_suite",
    "load_named",
    "load_snapshot",
    "load_sources",
    "parse",
    "split_sources",
]

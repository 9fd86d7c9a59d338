"""AgentDojo's suites behind mcp-hazard's hazards (docs/agentdojo.md): `agentdojo:SUITE[@VERSION]` wherever a
scenario path is taken.

Only library.py imports the installed AgentDojo package (the `agentdojo` extra), and only when a source names it;
the rest reads names, facts tables and snapshots, so `score` and `--help` never import it.
"""

from __future__ import annotations

import importlib
from typing import Any

from mcp_hazard.agentdojo.source_names import DEFAULT_VERSION, PREFIX, SUITES, Source, is_source, parse
from mcp_hazard.agentdojo.sources import load_named, load_sources, split_sources

# Loaded on first use: a suite's scenario brings its tool facts (built on the proxy's, suite_facts.py), which
# `serve` of a scenario file must not import.
_LAZY = {"AgentDojoScenario": "scenario", "LoadedSuite": "scenario", "is_suite": "scenario",
         "is_snapshot": "snapshot", "load_snapshot": "snapshot"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"mcp_hazard.agentdojo.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

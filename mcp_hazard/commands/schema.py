"""`schema`: the JSON Schema of the scenario file format, or of the proxy file format, for editors."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mcp_hazard.commands.options import command_parser


def schema(args: argparse.Namespace) -> int:
    if getattr(args, "format", "scenario") == "proxy":
        from mcp_hazard.proxy.config import proxy_json_schema

        print(json.dumps(proxy_json_schema(), indent=2))
        return 0
    from mcp_hazard.scenario.models import scenario_json_schema

    print(json.dumps(scenario_json_schema(), indent=2))
    return 0


HELP = "print the JSON Schema of the scenario (or proxy) file format"
EXAMPLES = [
    ("mcp-hazard schema > scenario.schema.json", "the scenario format for editors"),
    ("mcp-hazard schema proxy > proxy.schema.json", "the proxy file format"),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "schema", HELP, EXAMPLES)
    parser.add_argument("format", nargs="?", choices=["scenario", "proxy"], default="scenario")
    parser.set_defaults(handler=schema)
    return parser

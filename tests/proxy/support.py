"""Helpers for proxy tests: the proxy as a stdio server, and trace reading."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO_ROOT, hazard_command
from mcp import StdioServerParameters

PROXIES = REPO_ROOT / "proxies"


def proxy_params(*args: str) -> StdioServerParameters:
    """`mcp-hazard proxy ARGS...` as a stdio server for the SDK client."""
    command = hazard_command("proxy", *args)
    return StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO_ROOT))


def events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def of_type(path: Path, kind: str) -> list[dict[str, object]]:
    return [e for e in events(path) if e["type"] == kind]

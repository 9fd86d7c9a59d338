"""Proxy mode: hazards and interface interventions in front of a real MCP server (docs/proxy.md).

A proxy passes on what the server offers, logging included, which the 2026-07-28 protocol deprecates: the SDK's
deprecation warnings about it are the server's business, not noise for the proxy's user.
"""

import warnings

from mcp.shared.exceptions import MCPDeprecationWarning

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

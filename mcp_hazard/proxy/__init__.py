"""Proxy mode: hazards and interface interventions in front of a real MCP server (docs/proxy.md).

The package itself imports no SDK: scoring and replaying a proxy episode's trace read only its records
(upstream_info.py, environment.py, config.py). What talks to a server (upstream.py) brings the SDK in.
"""

"""The shipped suite's generator: a seeded world per domain and natural task templates (docs/suite.md).

`mcp-hazard generate suite --out scenarios/suite` writes it (commands/generate.py).
"""

from mcp_hazard.generate.suite.domains import DOMAINS, Domain
from mcp_hazard.generate.suite.shipped import SUITE_COMMAND, SUITE_NAME, SUITE_VERSION, render_suite, write_suite

__all__ = ["DOMAINS", "SUITE_COMMAND", "SUITE_NAME", "SUITE_VERSION", "Domain", "render_suite", "write_suite"]

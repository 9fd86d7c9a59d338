"""mcp-hazard: an MCP server that plays an unreliable tool environment for tool-using agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcp-hazard")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]

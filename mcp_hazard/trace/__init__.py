"""Episode traces: event models, the append-only writer and a damage-tolerant reader.

The reader is loaded on first use: a server writes traces and never reads one, and every module it imports is paid
before a stdio client's first listing.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.trace.events import SCHEMA_VERSION, VOLATILE_FIELDS, comparable
from mcp_hazard.trace.writer import TraceWriter

__all__ = ["SCHEMA_VERSION", "VOLATILE_FIELDS", "Trace", "TraceWriter", "comparable", "first_difference", "read_trace"]


def __getattr__(name: str) -> Any:
    if name in ("Trace", "first_difference", "read_trace"):
        from mcp_hazard.trace import reader

        return getattr(reader, name)
    raise AttributeError(f"module 'mcp_hazard.trace' has no attribute {name!r}")

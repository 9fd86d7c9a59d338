"""Episode traces: event models, the append-only writer and a damage-tolerant reader."""

from mcp_hazard.trace.events import SCHEMA_VERSION, VOLATILE_FIELDS, comparable
from mcp_hazard.trace.reader import Trace, first_difference, read_trace
from mcp_hazard.trace.writer import TraceWriter

__all__ = ["SCHEMA_VERSION", "VOLATILE_FIELDS", "Trace", "TraceWriter", "comparable", "first_difference", "read_trace"]

"""Logs on stderr only: on stdio, stdout belongs to the MCP protocol.

`log.info("episode started", episode=..., task=...)` writes one line, structlog's console layout without colours:

    2026-03-14T09:26:53.589793Z [info     ] episode started                episode=e1 task=fare-class

A small chain of its own rather than structlog: `import structlog` loads its dev renderer, which loads rich
(about 100 ms of a stdio server's start-up, docs/performance.md). Levels below the configured one cost one
comparison. The SDK's and uvicorn's own loggers go through the standard `logging` module, set up here too.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import traceback
from typing import Any

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_threshold = logging.NOTSET  # library use without configure_logging(): every line, on stderr


def configure_logging(level: str | None = None) -> None:
    """`level` (or $MCP_HAZARD_LOG_LEVEL, else warning) for mcp-hazard's lines and the standard loggers."""
    global _threshold
    name = (level or os.environ.get("MCP_HAZARD_LOG_LEVEL") or "warning").lower()
    numeric = _LEVELS.get(name, logging.WARNING)
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(levelname)s %(name)s: %(message)s", force=True)
    for noisy in ("mcp", "httpx", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
    _threshold = numeric


def _value(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def render(level: str, event: str, fields: dict[str, Any]) -> str:
    """One log line (without the newline): timestamp, level, event, then key=value in the order given."""
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    pairs = " ".join(f"{key}={_value(value)}" for key, value in fields.items())
    return f"{stamp} [{level:<9}] {event:<30} {pairs}".rstrip()


class Logger:
    """The few methods mcp-hazard calls: debug, info, warning, error, and exception (error plus the traceback)."""

    def _write(self, level: str, event: str, fields: dict[str, Any], trace: bool = False) -> None:
        line = render(level, event, fields) + "\n"
        if trace:
            line += traceback.format_exc()
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed or gone: a log line is never worth a crash
            pass

    def debug(self, event: str, **fields: Any) -> None:
        if _threshold <= logging.DEBUG:
            self._write("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        if _threshold <= logging.INFO:
            self._write("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        if _threshold <= logging.WARNING:
            self._write("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        if _threshold <= logging.ERROR:
            self._write("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """An error line with the traceback of the exception being handled."""
        if _threshold <= logging.ERROR:
            self._write("error", event, fields, trace=True)


log = Logger()

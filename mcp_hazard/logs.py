"""Logs on stderr only: on stdio, stdout belongs to the MCP protocol.

`log.info("episode started", episode=..., task=...)` writes one line in structlog's console layout, without colours:

    2026-03-14T09:26:53.589793Z [info     ] episode started                episode=e1 task=fare-class

structlog renders the lines, but is imported only when the first line at the configured level is written: its
import loads its dev renderer and, through it, rich (about 100 ms of a stdio server's start-up,
docs/performance.md), and a server at the default level writes no line on a good day. Levels below the configured
one cost one comparison. The SDK's and uvicorn's own loggers go through the standard `logging` module, set up here.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, TextIO, cast

from mcp_hazard.terminal_text import visible

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


class _Stderr:
    """Whatever `sys.stderr` is when a line is written (a test may have replaced it since the first line)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(visible(text))

    def flush(self) -> None:
        sys.stderr.flush()


_renderer: Any = None


def _structlog() -> Any:
    global _renderer
    if _renderer is None:
        import structlog

        _renderer = structlog.wrap_logger(
            structlog.PrintLogger(file=cast(TextIO, _Stderr())),
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.dev.ConsoleRenderer(
                    colors=False, sort_keys=False, exception_formatter=structlog.dev.plain_traceback
                ),
            ],
        )
    return _renderer


class Logger:
    """The few methods mcp-hazard calls: debug, info, warning, error, and exception (error plus the traceback)."""

    def _write(self, level: str, event: str, fields: dict[str, Any], trace: bool = False) -> None:
        try:
            renderer = _structlog()
            if trace:
                renderer.exception(event, **fields)
            else:
                getattr(renderer, level)(event, **fields)
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


class LogBudget:
    """Warning lines about one source's faults (a server behind the proxy, a client under test): the first `limit`,
    then `last`, then none, so a source that sends nothing but faults cannot fill a log. What the lines report is
    recorded elsewhere as well (the trace), so nothing is lost but the repetition."""

    def __init__(self, limit: int, last: str) -> None:
        self.left = limit
        self.last = last

    def warning(self, event: str, **fields: Any) -> None:
        if self.left <= 0:
            return
        self.left -= 1
        log.warning(event, **fields)
        if self.left == 0:
            log.warning(self.last)

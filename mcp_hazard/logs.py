"""structlog set up to write to stderr only: on stdio, stdout belongs to the MCP protocol."""

from __future__ import annotations

import logging
import os
import sys

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(level: str | None = None) -> None:
    name = (level or os.environ.get("MCP_HAZARD_LOG_LEVEL") or "warning").lower()
    numeric = _LEVELS.get(name, logging.WARNING)
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(levelname)s %(name)s: %(message)s", force=True)
    for noisy in ("mcp", "httpx", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


if not structlog.is_configured():
    # Library use without configure_logging(): never log to stdout, which stdio servers reserve for the protocol.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))

log = structlog.get_logger("mcp_hazard")

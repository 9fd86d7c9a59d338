"""What one connection may hold: a deadline for each request to arrive whole, and a cap on open connections.

uvicorn (h11) closes an idle keep-alive connection after `timeout_keep_alive`, but sets no deadline on a request's
header or body: a connection that sends half a header is held forever. 19,990 of them used every file descriptor;
asyncio then logged a traceback for each failed `accept()` (up to the listen backlog, 2,048, each time the socket
was readable): 443 MB of stderr. `limit_concurrency` answers 503 only once a whole request has arrived, so it does not
help. Here, at the protocol layer where bytes arrive:

- a request (header and body) must arrive whole within `read_timeout` seconds of the connection opening or of the
  previous response; otherwise the connection is closed (a partial header gets a one-line 408 first; a partial body
  ends with the route seeing a disconnect);
- above `max_connections` open connections, a new one gets a one-line 503 and is closed at once;
- a malformed request gets a one-line JSON 400 instead of uvicorn's text;
- none of these writes a line per connection: one summary line at most once a minute. The server's own `accept()`
  failing for want of file descriptors is counted the same way, never logged as a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import socket
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from mcp_hazard.logs import log

DEFAULT_READ_TIMEOUT = 10.0
"""Seconds a request may take to arrive whole: loopback clients send a tool call in well under a millisecond."""
DEFAULT_MAX_CONNECTIONS = 1000
"""Open connections at once: 200 concurrent episodes use about 400 (an SSE stream and a request each)."""
FILE_RESERVE = 1024
"""File descriptors kept free of connections: one trace file per live episode, the listening socket, the logs."""
DEFAULT_BACKLOG = 512
"""Connections asyncio accepts in one go (its accept loop takes up to the listen backlog at a time, before any of
them can be refused): each holds a descriptor until it is closed, so a burst must fit beside the cap."""
SUMMARY_INTERVAL = 60.0
"""Seconds between two summary lines of closed and refused connections."""

_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
_WHAT = {
    "timed_out": "closed {n} connection(s) whose request did not arrive whole within {timeout:g} s",
    "over_cap": "refused {n} connection(s) over the cap of {cap} open connections (503)",
    "malformed": "answered {n} malformed HTTP request(s) with 400",
    "accept_failed": "could not accept {n} connection(s): the process is out of file descriptors",
}


@dataclass(frozen=True)
class Limits:
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    backlog: int = DEFAULT_BACKLOG


class _Summary:
    """Counts closed and refused connections; writes one line when the first comes, then what came since at most
    once a minute (a line is due at the end of each minute that saw any)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.counts: Counter[str] = Counter()
        self.last: float | None = None
        self.due: asyncio.TimerHandle | None = None

    def add(self, what: str, loop: asyncio.AbstractEventLoop) -> None:
        self.counts[what] += 1
        now = time.monotonic()  # when to write a log line, never a decision a trace records
        if self.last is None or now - self.last >= SUMMARY_INTERVAL:
            self.write()
        elif self.due is None:
            self.due = loop.call_later(SUMMARY_INTERVAL - (now - self.last), self.write)

    def write(self) -> None:
        if self.due is not None:
            self.due.cancel()
            self.due = None
        if not self.counts:
            return
        self.last = time.monotonic()
        told = [
            _WHAT[key].format(n=n, timeout=self.limits.read_timeout, cap=self.limits.max_connections)
            for key, n in sorted(self.counts.items())
        ]
        self.counts.clear()
        log.warning("; ".join(told) + " (at most one such line a minute)")


def _raw_response(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 response with a one-line JSON error, for a connection that has no request cycle to answer."""
    body = json.dumps({"error": message}).encode("ascii")
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n")  # fmt: skip
    return head.encode("ascii") + body


class _NoBadRequestLines(logging.Filter):
    """uvicorn logs "Invalid HTTP request received." once per malformed request; the summary counts them instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Invalid HTTP request received."


_LOGGER = logging.getLogger("uvicorn.error.connections")
_LOGGER.addFilter(_NoBadRequestLines())


def protocol_for(limits: Limits) -> tuple[type[asyncio.Protocol], _Summary]:
    """An h11 protocol class that applies `limits`, and the summary its connections report to."""
    summary = _Summary(limits)
    busy = _raw_response(503, "Service Unavailable", f"too many open connections (the cap is "
                         f"{limits.max_connections}); try again shortly")  # fmt: skip
    late = _raw_response(408, "Request Timeout", f"the request did not arrive whole within "
                         f"{limits.read_timeout:g} s; the connection is closed")  # fmt: skip
    attributes = {"limits": limits, "summary": summary, "busy": busy, "late": late}
    return type("BoundedH11Protocol", (_BoundedH11Protocol,), attributes), summary


class _BoundedH11Protocol(H11Protocol):
    """h11 with a cap on open connections, a deadline for each request to arrive whole, and a 400 of our own for a
    malformed one; `protocol_for` makes the class for one server's limits."""

    limits: ClassVar[Limits]
    summary: ClassVar[_Summary]
    busy: ClassVar[bytes]
    """The answer to a connection over the cap."""
    late: ClassVar[bytes]
    """The answer to half a header when the deadline comes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.logger = _LOGGER  # its records still reach uvicorn's handlers; only the per-request line is dropped
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False
        self._answered = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            self._refused = True
            self.transport = transport
            transport.write(self.busy)
            transport.close()
            self.summary.add("over_cap", self.loop)
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        self._settle()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._answered = True
        if not self.transport.is_closing():
            self._arm()  # the next request's deadline; an idle connection meets the keep-alive timeout first
            self._settle()

    def send_400_response(self, msg: str) -> None:
        self.summary.add("malformed", self.loop)
        self._disarm()
        self.transport.write(_raw_response(400, "Bad Request", "malformed HTTP request; the connection is closed"))
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.limits.read_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _settle(self) -> None:
        """The request has arrived whole (or the connection is done): its deadline no longer applies."""
        if self._deadline is not None and self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()

    def _timed_out(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        partial = bool(self.conn.trailing_data[0])
        if self.conn.their_state is h11.IDLE and (partial or not self._answered):
            self.summary.add("timed_out", self.loop)
            if partial:  # half a header: no request cycle exists to answer it
                self.transport.write(self.late)
        elif self.conn.their_state is h11.SEND_BODY:
            self.summary.add("timed_out", self.loop)  # the route reading the body sees a disconnect
        self.transport.close()


class Server(uvicorn.Server):
    """uvicorn's server with the accept loop's out-of-descriptors errors counted in the summary, not logged; with
    `signals=False`, without uvicorn's SIGINT/SIGTERM handlers (a server inside a run, which handles them itself)."""

    def __init__(self, config: uvicorn.Config, summary: _Summary, *, signals: bool = True) -> None:
        super().__init__(config)
        self.summary = summary
        self.signals = signals

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if self.signals:
            with super().capture_signals():
                yield
        else:
            yield

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        previous = loop.get_exception_handler()

        def quiet(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            failed = context.get("exception")
            if isinstance(failed, OSError) and failed.errno in _OUT_OF_FILES and "accept" in context.get("message", ""):
                self.summary.add("accept_failed", loop)  # asyncio retries in a second; connections time out meanwhile
                return
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(quiet)
        try:
            await super().serve(sockets)
        finally:
            loop.set_exception_handler(previous)


def http_server(app: Any, limits: Limits, *, signals: bool = True, **options: Any) -> Server:
    """A uvicorn server for `app` that applies `limits` (options: uvicorn.Config's, e.g. host and port); with
    `signals=False` it leaves SIGINT and SIGTERM to its caller."""
    protocol, summary = protocol_for(limits)
    options.setdefault("log_level", "warning")
    config = uvicorn.Config(app, http=protocol, backlog=limits.backlog, **options)
    return Server(config, summary, signals=signals)


def fit_file_limit(read_timeout: float, max_connections: int) -> Limits:
    """The limits that fit the open-file limit, raised first (within the hard one) to leave FILE_RESERVE descriptors
    and one accept burst beside the connection cap: the server should refuse a connection with a 503 before
    `accept()` itself fails for want of descriptors. When the limit cannot be raised far enough, the cap is lowered
    (one line says so) and the accept burst with it: new connections then wait a little longer in the kernel's
    queue."""
    fitted = Limits(read_timeout, max_connections)
    try:
        import resource
    except ImportError:  # not on Unix: the system's own limits apply
        return fitted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + FILE_RESERVE + DEFAULT_BACKLOG
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return fitted
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    cap = min(max_connections, max(soft // 2, soft - FILE_RESERVE))
    backlog = max(16, min(DEFAULT_BACKLOG, (soft - cap) // 4))
    if cap < max_connections:
        log.warning(f"the open-file limit ({soft}) leaves room for {cap} connections; the cap is lowered from "
                    f"{max_connections} (raise it with `ulimit -n`)")  # fmt: skip
    return Limits(read_timeout, cap, backlog)

"""The model endpoint over HTTP: one chat completion with retries, and the preflight a run makes before its first
episode.

Retries are for what a busy or restarting server does (HTTP 408, 429, 5xx, a lost connection, a connect timeout); a
request the server refuses (any other 4xx) would be refused again, and one it took but did not answer in time is
still being worked on (a single-slot server such as llama.cpp would queue the copy behind it), so both fail at once.
The waits are a fixed sequence (backoff_s x 1, 2, 4, 8, capped) or the server's own `Retry-After` in seconds
(capped): no jitter, so two runs of the same episode against the same server wait the same. Giving up raises
`LlmEndpointError`, one line with the status and the start of the body, never the API key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx

from mcp_hazard.agents.drive import AgentReport
from mcp_hazard.agents.llm_config import ENV_API_KEY, ENV_RETRIES, ENV_TIMEOUT_S, LlmConfig, one_line
from mcp_hazard.errors import UserError
from mcp_hazard.json_parse import loads
from mcp_hazard.logs import log

MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 30.0
PREFLIGHT_TIMEOUT_S = 10.0
RETRYABLE = frozenset({408, 429})
_AS_SENT = frozenset({"content-encoding", "content-length", "transfer-encoding"})  # of the body before decoding
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest reply read (a chat completion is kilobytes, megabytes with log-probabilities): the runner holds every
episode's agent, so one endpoint's endless or decompressed-without-end body must not take its memory."""

Sleep = Callable[[float], Awaitable[None]]


class LlmEndpointError(UserError):
    """The chat-completions endpoint failed for good (unreachable, timed out, refused, not a chat completion).
    One line."""


def backoff(config: LlmConfig, attempt: int, retry_after: float | None) -> float:
    """The wait before retry number `attempt + 1`: the server's Retry-After when it gave one, else doubling."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), MAX_RETRY_AFTER_S)
    return min(config.backoff_s * 2**attempt, MAX_BACKOFF_S)


def retry_after_of(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds. The HTTP-date form is ignored: reading it would put the clock into a decision."""
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds == seconds else None  # NaN is no advice


def _excerpt(response: httpx.Response) -> str:
    return one_line(response.text) or "(empty body)"


def _chat_completion(config: LlmConfig, response: httpx.Response) -> dict[str, Any]:
    where = f"LLM endpoint {config.url}"
    try:
        body = loads(response.content, allow_nan=True)  # json_parse.py: nesting too deep, lone surrogates
    except ValueError:  # UnicodeDecodeError too
        raise LlmEndpointError(
            f"{where}: HTTP {response.status_code} but the body is not JSON: {_excerpt(response)}"
        ) from None
    message = None
    if isinstance(body, dict) and isinstance(body.get("choices"), list) and body["choices"]:
        choice = body["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise LlmEndpointError(f"{where}: not a chat completion (no choices[0].message): {_excerpt(response)}")
    return dict(body)


class Endpoint:
    """One episode's connection to the model. `sleep` is injectable so tests see the waits without waiting."""

    def __init__(self, config: LlmConfig, sleep: Sleep | None = None) -> None:
        self.config = config
        self.sleep: Sleep = sleep or anyio.sleep
        self._http = httpx.AsyncClient(timeout=config.timeout_s, headers=config.headers())

    async def __aenter__(self) -> Endpoint:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def complete(self, payload: dict[str, Any], report: AgentReport, turn: int) -> dict[str, Any]:
        """One chat completion's JSON body, after up to `retries` retries; each retry is logged and noted."""
        config = self.config
        where = f"LLM endpoint {config.url}"
        for attempt in range(config.retries + 1):
            retry_after: float | None = None
            try:
                response = await self._post(payload)
            except httpx.ReadTimeout:
                # The server took the request and is still working on it: a second copy would queue behind it.
                raise LlmEndpointError(f"{where}: no response within {config.timeout_s:g}s ({ENV_TIMEOUT_S})") from None
            except httpx.TimeoutException:
                problem = f"no connection within {config.timeout_s:g}s ({ENV_TIMEOUT_S})"
            except httpx.HTTPError as exc:
                problem = f"cannot connect: {one_line(str(exc)) or type(exc).__name__}"
            else:
                if response.is_success:
                    return _chat_completion(config, response)
                status = response.status_code
                problem = f"HTTP {status}: {_excerpt(response)}"
                if status not in RETRYABLE and status < 500:
                    raise LlmEndpointError(f"{where}: {problem}")
                retry_after = retry_after_of(response)
            if attempt == config.retries:
                plural = "retry" if config.retries == 1 else "retries"
                tried = f" (after {config.retries} {plural}, {ENV_RETRIES})" if config.retries else ""
                raise LlmEndpointError(f"{where}: {problem}{tried}")
            wait = backoff(config, attempt, retry_after)
            log.warning("llm endpoint retry", url=config.url, turn=turn, retry=attempt + 1, wait_s=wait,
                        problem=problem)  # fmt: skip
            report.notes.append(
                f"turn {turn}: model endpoint {one_line(problem, 160)}; retry {attempt + 1}/{config.retries} "
                f"in {wait:g}s"
            )
            await self.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _post(self, payload: dict[str, Any]) -> httpx.Response:
        """The reply, its body read whole up to MAX_BODY_BYTES (decompressed); a longer one is refused at that."""
        async with self._http.stream("POST", self.config.url, json=payload) as streamed:
            body = bytearray()
            async for chunk in streamed.aiter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise LlmEndpointError(f"LLM endpoint {self.config.url}: HTTP {streamed.status_code} with a body "
                                           f"of more than {MAX_BODY_BYTES:,} bytes, more than a chat completion "
                                           "holds; not read further")  # fmt: skip
        headers = [(name, value) for name, value in streamed.headers.items() if name not in _AS_SENT]
        return httpx.Response(streamed.status_code, headers=headers, content=bytes(body), request=streamed.request)


def check_endpoint(config: LlmConfig) -> None:
    """Fail fast, before any episode, on an endpoint that cannot be reached or refuses the key: GET {base}/models.

    A 404 is fine (some servers have no /models), and so is any other answer: the episodes retry what may pass.
    """
    where = f"LLM endpoint {config.models_url}"
    timeout = min(config.timeout_s, PREFLIGHT_TIMEOUT_S)
    try:
        response = httpx.get(config.models_url, headers=config.headers(), timeout=timeout)
    except httpx.TimeoutException:
        raise LlmEndpointError(f"{where}: no response within {timeout:g}s") from None
    except httpx.HTTPError as exc:
        raise LlmEndpointError(f"{where}: cannot connect: {one_line(str(exc)) or type(exc).__name__}") from None
    if response.status_code in (401, 403):
        raise LlmEndpointError(f"{where}: HTTP {response.status_code} (check {ENV_API_KEY}): {_excerpt(response)}")

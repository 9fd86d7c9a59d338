"""The LLM agent's settings: environment variables, overridden by constructor arguments of the same meaning.

Every bad value is one `UserError` line naming the variable (or the argument) it came from, raised when the agent is
built, so a run fails before its first episode rather than in each of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.errors import UserError

ENV_BASE_URL = "MCP_HAZARD_LLM_BASE_URL"
ENV_MODEL = "MCP_HAZARD_LLM_MODEL"
ENV_API_KEY = "MCP_HAZARD_LLM_API_KEY"
ENV_MAX_TURNS = "MCP_HAZARD_LLM_MAX_TURNS"
ENV_TEMPERATURE = "MCP_HAZARD_LLM_TEMPERATURE"
ENV_TIMEOUT_S = "MCP_HAZARD_LLM_TIMEOUT_S"
ENV_MAX_TOKENS = "MCP_HAZARD_LLM_MAX_TOKENS"
ENV_SEED = "MCP_HAZARD_LLM_SEED"
ENV_RETRIES = "MCP_HAZARD_LLM_RETRIES"
ALL_ENV = (
    ENV_BASE_URL, ENV_MODEL, ENV_API_KEY, ENV_MAX_TURNS, ENV_TEMPERATURE, ENV_TIMEOUT_S, ENV_MAX_TOKENS, ENV_SEED,
    ENV_RETRIES,
)  # fmt: skip

DEFAULT_MAX_TURNS = 20
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_TOKENS = 1024
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF_S = 1.0
EXCERPT_CHARS = 200


def one_line(text: str, limit: int = EXCERPT_CHARS) -> str:
    """Whitespace folded and cut, so a server's multi-line error body stays one line of a message."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _pick(explicit: Any, env: Mapping[str, str], variable: str, argument: str) -> tuple[Any, str]:
    """The explicit value (blamed as the argument) if given, else the environment's (empty = unset)."""
    if explicit is not None:
        return explicit, argument
    return (env.get(variable, "").strip() or None), variable


def _number(picked: tuple[Any, str], default: float, *, integer: bool, minimum: float, strict: bool) -> float:
    value, name = picked
    if value is None:
        return default
    wrong = UserError(
        f"{name} must be {'a whole number' if integer else 'a number'} {'>' if strict else '>='} {minimum:g}, "
        f"got {value!r}"
    )
    if isinstance(value, bool):
        raise wrong
    try:
        number = int(value) if integer and not isinstance(value, float) else float(value)
    except (TypeError, ValueError):
        raise wrong from None
    if number != number or number < minimum or (strict and number == minimum) or (integer and number % 1):
        raise wrong  # NaN, out of range, or a fraction where a whole number is needed
    return number


def _seed(picked: tuple[Any, str]) -> int | None:
    value, name = picked
    if value is None:
        return None
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be a whole number, got {value!r}") from None


@dataclass(frozen=True)
class LlmConfig:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    max_turns: int = DEFAULT_MAX_TURNS
    temperature: float = DEFAULT_TEMPERATURE
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int | None = None
    retries: int = DEFAULT_RETRIES
    # The first retry's wait; each next one doubles (capped). Not a variable: tests shrink it, users have Retry-After.
    backoff_s: float = DEFAULT_BACKOFF_S

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def models_url(self) -> str:
        return f"{self.base_url}/models"

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": "mcp-hazard-llm-agent"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    @classmethod
    def resolve(
        cls, *, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
        max_turns: int | None = None, temperature: float | None = None, timeout_s: float | None = None,
        max_tokens: int | None = None, seed: int | None = None, retries: int | None = None,
        backoff_s: float | None = None, env: Mapping[str, str] | None = None,
    ) -> LlmConfig:  # fmt: skip
        """Explicit arguments first, then the environment (`env`, default `os.environ`), then defaults."""
        source = os.environ if env is None else env
        base, base_name = _pick(base_url, source, ENV_BASE_URL, "base_url")
        if not base:
            raise UserError(
                f"{base_name} is not set: give the OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1"
            )
        base = str(base).strip().rstrip("/").removesuffix("/chat/completions")
        if not base.startswith(("http://", "https://")):
            raise UserError(f"{base_name} must start with http:// or https://, got {one_line(base, 80)!r}")
        name, model_name = _pick(model, source, ENV_MODEL, "model")
        if not name:
            raise UserError(f"{model_name} is not set: give the model name the endpoint serves, e.g. qwen2.5:7b")
        key, _ = _pick(api_key, source, ENV_API_KEY, "api_key")
        turns = _number(_pick(max_turns, source, ENV_MAX_TURNS, "max_turns"), DEFAULT_MAX_TURNS, integer=True,
                        minimum=1, strict=False)  # fmt: skip
        temp = _number(_pick(temperature, source, ENV_TEMPERATURE, "temperature"), DEFAULT_TEMPERATURE,
                       integer=False, minimum=0, strict=False)  # fmt: skip
        timeout = _number(_pick(timeout_s, source, ENV_TIMEOUT_S, "timeout_s"), DEFAULT_TIMEOUT_S, integer=False,
                          minimum=0, strict=True)  # fmt: skip
        tokens = _number(_pick(max_tokens, source, ENV_MAX_TOKENS, "max_tokens"), DEFAULT_MAX_TOKENS, integer=True,
                         minimum=1, strict=False)  # fmt: skip
        tries = _number(_pick(retries, source, ENV_RETRIES, "retries"), DEFAULT_RETRIES, integer=True, minimum=0,
                        strict=False)  # fmt: skip
        backoff = _number((backoff_s, "backoff_s"), DEFAULT_BACKOFF_S, integer=False, minimum=0, strict=False)
        return cls(
            base_url=base, model=str(name).strip(), api_key=str(key) if key else None, max_turns=int(turns),
            temperature=temp, timeout_s=timeout, max_tokens=int(tokens),
            seed=_seed(_pick(seed, source, ENV_SEED, "seed")), retries=int(tries), backoff_s=backoff,
        )  # fmt: skip

"""The LLM agent's settings (environment, overridden by arguments; every bad value one line naming its variable) and
the preflight `check_endpoint` a run makes before its first episode."""

from __future__ import annotations

import pytest

from mcp_hazard.agents.llm import (
    ALL_ENV,
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MAX_TOKENS,
    ENV_MAX_TURNS,
    ENV_MODEL,
    ENV_RETRIES,
    ENV_SEED,
    ENV_TEMPERATURE,
    ENV_TIMEOUT_S,
    LlmAgent,
    LlmConfig,
    LlmEndpointError,
    check_endpoint,
)
from mcp_hazard.errors import UserError
from mcp_hazard.runner.transports import free_port

from .fake_llm import FakeLlm


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ALL_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:11434/v1")
    monkeypatch.setenv(ENV_MODEL, "qwen2.5:7b")


def test_missing_model_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:11434/v1")
    with pytest.raises(UserError) as caught:
        LlmAgent()
    assert str(caught.value).startswith("MCP_HAZARD_LLM_MODEL is not set")
    assert "\n" not in str(caught.value)


def test_missing_base_url_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "qwen2.5:7b")
    monkeypatch.setenv(ENV_BASE_URL, "  ")  # blank counts as unset
    with pytest.raises(UserError, match=r"^MCP_HAZARD_LLM_BASE_URL is not set"):
        LlmAgent()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (ENV_MAX_TURNS, "zero", "MCP_HAZARD_LLM_MAX_TURNS must be a whole number >= 1, got 'zero'"),
        (ENV_MAX_TURNS, "0", "MCP_HAZARD_LLM_MAX_TURNS must be a whole number >= 1, got '0'"),
        (ENV_TEMPERATURE, "-1", "MCP_HAZARD_LLM_TEMPERATURE must be a number >= 0, got '-1'"),
        (ENV_TIMEOUT_S, "0", "MCP_HAZARD_LLM_TIMEOUT_S must be a number > 0, got '0'"),
        (ENV_MAX_TOKENS, "0", "MCP_HAZARD_LLM_MAX_TOKENS must be a whole number >= 1, got '0'"),
        (ENV_MAX_TOKENS, "1.5", "MCP_HAZARD_LLM_MAX_TOKENS must be a whole number >= 1, got '1.5'"),
        (ENV_RETRIES, "-1", "MCP_HAZARD_LLM_RETRIES must be a whole number >= 0, got '-1'"),
        (ENV_SEED, "abc", "MCP_HAZARD_LLM_SEED must be a whole number, got 'abc'"),
        (ENV_BASE_URL, "127.0.0.1:11434/v1", "MCP_HAZARD_LLM_BASE_URL must start with http:// or https://"),
    ],
)
def test_bad_setting_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, endpoint: None, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(UserError) as caught:
        LlmAgent()
    assert str(caught.value).startswith(expected)
    assert "\n" not in str(caught.value)


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:11434/v1/chat/completions/")
    monkeypatch.setenv(ENV_MODEL, "qwen2.5:7b")
    monkeypatch.setenv(ENV_API_KEY, "sk-env")
    config = LlmAgent().config
    assert config.url == "http://127.0.0.1:11434/v1/chat/completions"
    assert config.models_url == "http://127.0.0.1:11434/v1/models"
    assert (config.model, config.api_key, config.max_turns, config.temperature, config.timeout_s) == (
        "qwen2.5:7b", "sk-env", 20, 0.0, 60.0,
    )  # fmt: skip
    assert (config.max_tokens, config.seed, config.retries, config.backoff_s) == (1024, None, 4, 1.0)
    assert "sk-env" not in repr(config)

    monkeypatch.setenv(ENV_MAX_TOKENS, "256")
    monkeypatch.setenv(ENV_SEED, "-3")
    monkeypatch.setenv(ENV_RETRIES, "0")
    config = LlmAgent().config
    assert (config.max_tokens, config.seed, config.retries) == (256, -3, 0)
    # An argument beats its variable, and is blamed by its own name.
    assert LlmAgent(max_turns=5, timeout_s=2.5, max_tokens=64, seed=1).config.max_tokens == 64
    with pytest.raises(UserError, match=r"^retries must be a whole number >= 0"):
        LlmAgent(retries=-2)


def config_for(url: str, api_key: str | None = None) -> LlmConfig:
    return LlmConfig.resolve(base_url=url, model="fake-model", api_key=api_key, env={})


def test_preflight_passes_and_tolerates_a_missing_models_route() -> None:
    with FakeLlm(api_key="sk-good").in_thread() as fake:
        check_endpoint(config_for(fake.base_url, "sk-good"))
    with FakeLlm(models_status=404).in_thread() as fake:
        check_endpoint(config_for(fake.base_url))


def test_preflight_refused_key_is_one_line() -> None:
    with FakeLlm(api_key="sk-good").in_thread() as fake, pytest.raises(LlmEndpointError) as caught:
        check_endpoint(config_for(fake.base_url, "sk-wrong"))
    message = str(caught.value)
    assert "/v1/models: HTTP 401 (check MCP_HAZARD_LLM_API_KEY)" in message
    assert "sk-wrong" not in message and "\n" not in message


def test_preflight_unreachable_is_one_line() -> None:
    with pytest.raises(LlmEndpointError, match=r"^LLM endpoint http://127\.0\.0\.1:\d+/v1/models: cannot connect"):
        check_endpoint(config_for(f"http://127.0.0.1:{free_port()}/v1"))

"""A pydantic-ai agent as an mcp-hazard agent: `mcp-hazard run ... --agent-cmd 'python clients/pydantic_ai_agent.py'`.

The episode's tools reach the agent through pydantic-ai's own MCP client (`MCPToolset`, built on FastMCP's client:
a stdio server it starts, or the episode's URL, by `MCP_HAZARD_TRANSPORT`). The model is any OpenAI-compatible
chat-completions endpoint, named by the same variables as the built-in `llm` agent (`MCP_HAZARD_LLM_BASE_URL`,
`MCP_HAZARD_LLM_MODEL`, `MCP_HAZARD_LLM_API_KEY`, `MCP_HAZARD_LLM_MAX_TOKENS`, `MCP_HAZARD_LLM_TEMPERATURE`,
`MCP_HAZARD_LLM_MAX_TURNS`), or with `--test-model` pydantic-ai's own `TestModel`, which needs no endpoint: it calls
`submit_answer` with an answer made up from the tool's schema, so it shows the wiring, not a solution. Needs `pip
install 'mcp-hazard[pydantic-ai]'` (docs/agents.md, "Agent frameworks").

Two settings are made for local servers (llama.cpp, vLLM, Ollama): plain-text messages (clients/plain_messages.py),
and `max_tokens` under that name (see `model`). A tool error reaches the model as a retry prompt (pydantic-ai's
default); `TOOL_RETRIES` raises pydantic-ai's limit of one retry per tool, since the tools here fail on purpose and a
second transient error would otherwise end the run.
"""

import asyncio
import json
import os
import sys

from fastmcp.client.transports import StdioTransport
from openai import DefaultAsyncHttpxClient
from plain_messages import PlainTextMessages  # beside this file
from pydantic_ai import Agent, UsageLimits
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.profiles.openai import OpenAIModelProfile
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

INSTRUCTIONS = (
    "You solve the user's task with the tools you are given. Tools can fail or return odd results: read errors and "
    "try again or another way. When you know the answer, call submit_answer with it."
)
TOOL_RETRIES = 4


def setting(name: str, default: str | None = None) -> str:
    """An `MCP_HAZARD_LLM_*` variable (empty counts as unset, as for the built-in llm agent)."""
    value = os.environ.get(f"MCP_HAZARD_LLM_{name}") or default
    if value is None:
        sys.exit(f"pydantic_ai_agent: MCP_HAZARD_LLM_{name} is not set (or run with --test-model)")
    return value


def episode_toolset() -> MCPToolset:
    """The episode as pydantic-ai's MCP client reaches it: a stdio server it starts, or the episode's URL."""
    timeout = float(os.environ.get("MCP_HAZARD_CALL_TIMEOUT_S", "5"))
    if os.environ["MCP_HAZARD_TRANSPORT"] == "stdio":
        command = json.loads(os.environ["MCP_HAZARD_SERVER_COMMAND"])
        server = StdioTransport(command=command[0], args=command[1:])
    else:
        server = os.environ["MCP_HAZARD_URL"]
    return MCPToolset(server, max_retries=TOOL_RETRIES, read_timeout=timeout)


def model() -> OpenAIChatModel | TestModel:
    if "--test-model" in sys.argv[1:]:
        return TestModel(call_tools=["submit_answer"])  # every tool, with made-up arguments, would only fail
    http_client = DefaultAsyncHttpxClient(transport=PlainTextMessages())  # clients/plain_messages.py
    provider = OpenAIProvider(base_url=setting("BASE_URL"), api_key=setting("API_KEY", "none"), http_client=http_client)
    # `max_tokens`, which every OpenAI-compatible server reads, rather than OpenAI's newer `max_completion_tokens`
    profile = OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False)
    return OpenAIChatModel(setting("MODEL"), provider=provider, profile=profile)


async def main() -> None:
    settings = ModelSettings(
        max_tokens=int(setting("MAX_TOKENS", "1024")), temperature=float(setting("TEMPERATURE", "0"))
    )
    agent = Agent(model(), instructions=INSTRUCTIONS, toolsets=[episode_toolset()], model_settings=settings)
    limits = UsageLimits(request_limit=int(setting("MAX_TURNS", "20")))
    try:
        result = await agent.run(os.environ["MCP_HAZARD_PROMPT"], usage_limits=limits)
    except UsageLimitExceeded as exc:  # no answer: the scorer says `no_answer`, the log says why
        print(f"stopped: {exc}")
        return
    print(f"final output: {result.output}")


if __name__ == "__main__":
    asyncio.run(main())

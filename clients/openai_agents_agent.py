"""An OpenAI Agents SDK agent for `mcp-hazard run ... --agent-cmd 'python clients/openai_agents_agent.py'`.

The episode's tools reach the agent through the SDK's own MCP client (`MCPServerStdio` or `MCPServerStreamableHttp`,
by `MCP_HAZARD_TRANSPORT`); the model is any OpenAI-compatible chat-completions endpoint, named by the same variables
as the built-in `llm` agent (`MCP_HAZARD_LLM_BASE_URL`, `MCP_HAZARD_LLM_MODEL`, `MCP_HAZARD_LLM_API_KEY`,
`MCP_HAZARD_LLM_MAX_TOKENS`, `MCP_HAZARD_LLM_TEMPERATURE`, `MCP_HAZARD_LLM_MAX_TURNS`). Needs `pip install
'mcp-hazard[openai-agents]'` (docs/agents.md, "Agent frameworks").

The agent is the SDK's as a user would write it, with three choices stated where they are made: no tracing upload
(the SDK would send every run to OpenAI's platform), a run that stops at `submit_answer`, and plain-text messages
(clients/plain_messages.py) so that local servers (llama.cpp, vLLM) take the SDK's requests. A tool error reaches
the model as text (the SDK's default), so a hazard is the model's to recover from.
"""

import asyncio
import json
import os
import sys

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, StopAtTools, set_tracing_disabled
from agents.exceptions import MaxTurnsExceeded
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from plain_messages import PlainTextMessages  # beside this file

INSTRUCTIONS = (
    "You solve the user's task with the tools you are given. Tools can fail or return odd results: read errors and "
    "try again or another way. When you know the answer, call submit_answer with it."
)


def setting(name: str, default: str | None = None) -> str:
    """An `MCP_HAZARD_LLM_*` variable (empty counts as unset, as for the built-in llm agent)."""
    value = os.environ.get(f"MCP_HAZARD_LLM_{name}") or default
    if value is None:
        sys.exit(f"openai_agents_agent: MCP_HAZARD_LLM_{name} is not set")
    return value


def episode_server(timeout: float):
    """The episode as the SDK's MCP client reaches it: a stdio server it starts, or the episode's URL."""
    if os.environ["MCP_HAZARD_TRANSPORT"] == "stdio":
        command = json.loads(os.environ["MCP_HAZARD_SERVER_COMMAND"])
        params = {"command": command[0], "args": command[1:]}
        return MCPServerStdio(params, name="mcp-hazard", client_session_timeout_seconds=timeout)
    return MCPServerStreamableHttp(
        {"url": os.environ["MCP_HAZARD_URL"]}, name="mcp-hazard", client_session_timeout_seconds=timeout
    )


async def main() -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(
        base_url=setting("BASE_URL"), api_key=setting("API_KEY", "none"), max_retries=2,
        http_client=DefaultAsyncHttpxClient(transport=PlainTextMessages()),
    )  # fmt: skip
    model = OpenAIChatCompletionsModel(model=setting("MODEL"), openai_client=client)
    settings = ModelSettings(
        max_tokens=int(setting("MAX_TOKENS", "1024")), temperature=float(setting("TEMPERATURE", "0"))
    )
    timeout = float(os.environ.get("MCP_HAZARD_CALL_TIMEOUT_S", "5"))
    async with episode_server(timeout) as server:
        agent = Agent(
            name="hazard-agent",
            instructions=INSTRUCTIONS,
            model=model,
            model_settings=settings,
            mcp_servers=[server],
            tool_use_behavior=StopAtTools(stop_at_tool_names=["submit_answer"]),
        )
        try:
            result = await Runner.run(agent, os.environ["MCP_HAZARD_PROMPT"], max_turns=int(setting("MAX_TURNS", "20")))
        except MaxTurnsExceeded as exc:  # no answer: the scorer says `no_answer`, the log says why
            print(f"stopped: {exc}")
            return
    print(f"final output: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())

"""The LLM agent: a tool-calling loop over any OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server,
Ollama, a hosted API...), driving one MCP episode.

Configuration (environment variables; a constructor argument of the same meaning overrides each one):

    MCP_HAZARD_LLM_BASE_URL     required. The API root, e.g. http://127.0.0.1:11434/v1 (Ollama),
                                http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:8080/v1 (llama.cpp server).
                                Requests go to {base}/chat/completions.
    MCP_HAZARD_LLM_MODEL        required. The model name the endpoint serves, e.g. qwen2.5:7b-instruct.
    MCP_HAZARD_LLM_API_KEY      optional. Sent as `Authorization: Bearer ...`; never printed.
    MCP_HAZARD_LLM_MAX_TURNS    model requests per episode before giving up without an answer (default 20).
    MCP_HAZARD_LLM_TEMPERATURE  sampling temperature (default 0).
    MCP_HAZARD_LLM_TIMEOUT_S    seconds to wait for one model response (default 60).

An empty variable counts as unset. A missing or invalid value raises `UserError` with one line naming the variable,
when the agent is built (before any episode starts).

The loop. Each model turn: list the MCP tools (all pages), send the conversation with the tools as OpenAI
`function` tools (`parameters` is the tool's inputSchema) and `tool_choice: "auto"`, then

- run each returned tool call in order with `client.call_tool(..., read_timeout_seconds=brief.call_timeout_s)` and
  answer it with a `tool` message: the served text (`text_of`), prefixed `Tool error: ` for an isError result,
  followed by any `Hint: ` lines. Arguments that are not a JSON object are not sent to the server: the tool message
  says so, and the loop goes on. An MCP error (a client-side timeout, -32001, or a JSON-RPC error) and a result the
  SDK client rejects (structured content not matching the output schema) also become a tool message, and a note;
- a successful `submit_answer` call ends the loop with that answer (later calls of the same turn are skipped);
- a reply with text and no tool calls is submitted as the answer through `submit_answer` (if the server refuses
  it, the refusal goes back to the model as a user message and the loop goes on);
- an empty reply gets one user message asking the model to go on.

After MAX_TURNS model requests without an answer the agent stops and says so in the report's notes.

Tool list refresh: the agent re-lists the tools (`cache_mode="refresh"`, so the SDK's response cache never serves a
stale list) before every model turn. The client is built by the runner, so the agent cannot install a
`message_handler` to hear `notifications/tools/list_changed`; re-listing every turn needs no notification, works in
both protocol eras, and also catches drift a server does not announce. The cost is one `tools/list` per turn (a
`tools_listed` trace event each; listings are never call slots), and a spec_drift this agent recovers from is always
scored as path `relist`: what the episode measures is whether the *model* adapts to the new interface.

Endpoint failures (connection refused, timeout, a non-2xx status, a body that is not a chat completion) raise
`LlmEndpointError`, a `UserError` whose one-line message names the URL, the status and a short body excerpt (never
the API key). They are raised, not reported as a missing answer: the model never got its turn, and scoring the
episode as a failure would blame the model for the infrastructure. A runner should abort (the CLI prints the line and
exits non-zero) or mark the episode as not run, never score it. Note that an exception leaving the block of
`open_episode` (the SDK `Client`'s task group) arrives wrapped in an ExceptionGroup: catch `LlmEndpointError` around
`run()` inside the block, or use `except* UserError`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import mcp_types as types
from mcp import Client, MCPError

from mcp_hazard.agents.base import AgentReport, Brief, hints_of, text_of
from mcp_hazard.errors import UserError
from mcp_hazard.server.episode import SUBMIT_TOOL, TASK_PROMPT_NAME

ENV_BASE_URL = "MCP_HAZARD_LLM_BASE_URL"
ENV_MODEL = "MCP_HAZARD_LLM_MODEL"
ENV_API_KEY = "MCP_HAZARD_LLM_API_KEY"
ENV_MAX_TURNS = "MCP_HAZARD_LLM_MAX_TURNS"
ENV_TEMPERATURE = "MCP_HAZARD_LLM_TEMPERATURE"
ENV_TIMEOUT_S = "MCP_HAZARD_LLM_TIMEOUT_S"

DEFAULT_MAX_TURNS = 20
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TIMEOUT_S = 60.0
EXCERPT_CHARS = 200
MAX_LIST_PAGES = 100

SYSTEM_PROMPT = (
    "You solve the user's task by calling the tools you are given. Base your answer on what the tools return, "
    f"not on memory. When you know the final answer, call the `{SUBMIT_TOOL}` tool with it, in the form the task "
    "asks for."
)
NUDGE = f"Please continue: call a tool, or call `{SUBMIT_TOOL}` with your final answer."


class LlmEndpointError(UserError):
    """The chat-completions endpoint failed (unreachable, timed out, non-2xx, not a chat completion). One line."""


def _one_line(text: str, limit: int = EXCERPT_CHARS) -> str:
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
    try:
        number = int(value) if integer and not isinstance(value, float) else float(value)
    except (TypeError, ValueError):
        raise wrong from None
    if number != number or number < minimum or (strict and number == minimum) or (integer and number % 1):
        raise wrong  # NaN, out of range, or a fraction where a whole number is needed
    return number


@dataclass(frozen=True)
class LlmConfig:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    max_turns: int = DEFAULT_MAX_TURNS
    temperature: float = DEFAULT_TEMPERATURE
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @classmethod
    def resolve(
        cls, *, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
        max_turns: int | None = None, temperature: float | None = None, timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
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
            raise UserError(f"{base_name} must start with http:// or https://, got {_one_line(base, 80)!r}")
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
        return cls(
            base_url=base, model=str(name).strip(), api_key=str(key) if key else None, max_turns=int(turns),
            temperature=temp, timeout_s=timeout,
        )  # fmt: skip


# -- MCP side -------------------------------------------------------------------------------------------------------


async def list_all_tools(client: Client) -> list[types.Tool]:
    """Every page of the current tool list, fetched from the server (never from the SDK's response cache)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def openai_tools(tools: list[types.Tool]) -> list[dict[str, Any]]:
    """MCP tools as OpenAI `function` tools: name, description, and the inputSchema as `parameters`."""
    return [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description or "", "parameters": tool.input_schema},
        }
        for tool in tools
    ]


def result_message(result: types.CallToolResult) -> str:
    """What the model reads back from one call: the served text (marked if it is an error), then the hints."""
    text = text_of(result) or "(the tool returned no text)"
    if result.is_error:
        text = f"Tool error: {text}"
    lines = [text, *(f"Hint: {hint}" for hint in hints_of(result))]
    return "\n".join(lines)


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The model's arguments as an object, or why they are not one. Some servers send an object, most a string."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return None, f"the arguments must be a JSON object, got {type(raw).__name__}"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}): {_one_line(raw, 120)}"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}: {_one_line(raw, 120)}"
    return value, None


async def task_prompt(client: Client, brief: Brief) -> str:
    """The brief's prompt; if it is empty, the task as the server serves it (the `task` prompt)."""
    if brief.prompt.strip():
        return brief.prompt
    served = await client.get_prompt(TASK_PROMPT_NAME)
    texts = [m.content.text for m in served.messages if isinstance(m.content, types.TextContent)]
    return "\n\n".join(texts)


# -- the endpoint ---------------------------------------------------------------------------------------------------


async def _complete(http: httpx.AsyncClient, config: LlmConfig, payload: dict[str, Any]) -> dict[str, Any]:
    """One chat completion; returns the JSON body. Every failure is one `LlmEndpointError` line."""
    where = f"LLM endpoint {config.url}"
    try:
        response = await http.post(config.url, json=payload)
    except httpx.TimeoutException:
        raise LlmEndpointError(f"{where}: no response within {config.timeout_s:g}s ({ENV_TIMEOUT_S})") from None
    except httpx.HTTPError as exc:
        detail = _one_line(str(exc)) or type(exc).__name__
        raise LlmEndpointError(f"{where}: cannot connect: {detail}") from None
    if not response.is_success:
        raise LlmEndpointError(f"{where}: HTTP {response.status_code}: {_one_line(response.text) or '(empty body)'}")
    try:
        body = response.json()
    except ValueError:
        raise LlmEndpointError(
            f"{where}: HTTP {response.status_code} but the body is not JSON: {_one_line(response.text) or '(empty)'}"
        ) from None
    message = None
    if isinstance(body, dict) and isinstance(body.get("choices"), list) and body["choices"]:
        choice = body["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise LlmEndpointError(f"{where}: not a chat completion (no choices[0].message): {_one_line(response.text)}")
    return dict(body)


def _rejected_result(exc: RuntimeError) -> bool:
    """The SDK client's own refusal of a result (its output-schema check), as opposed to a broken client."""
    text = str(exc)
    return text.startswith(("Invalid structured content", "Invalid schema for tool")) or (
        text.startswith("Tool ") and "did not return structured content" in text
    )


def _normalise_calls(raw: Any, turn: int) -> list[dict[str, Any]]:
    """Tool calls with an id, a name and string arguments, whatever the server's dialect."""
    calls: list[dict[str, Any]] = []
    for index, call in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(call, dict):
            continue
        raw_function = call.get("function")
        function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str) and arguments is not None:
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(
            {
                "id": str(call.get("id") or f"call_{turn}_{index}"),
                "type": "function",
                "function": {"name": str(function.get("name") or ""), "arguments": arguments or ""},
            }
        )
    return calls


# -- the agent ------------------------------------------------------------------------------------------------------


class LlmAgent:
    """An `Agent` whose decisions come from a model behind an OpenAI-compatible chat-completions endpoint."""

    name = "llm"

    def __init__(
        self, *, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
        max_turns: int | None = None, temperature: float | None = None, timeout_s: float | None = None,
        system_prompt: str = SYSTEM_PROMPT, env: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Explicit arguments override the environment (`env`, default `os.environ`); see the module docstring."""
        self.config = LlmConfig.resolve(
            base_url=base_url, model=model, api_key=api_key, max_turns=max_turns, temperature=temperature,
            timeout_s=timeout_s, env=env,
        )  # fmt: skip
        self.system_prompt = system_prompt

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": "mcp-hazard-llm-agent"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return headers

    async def run(self, client: Client, brief: Brief) -> AgentReport:
        """Drive one episode; all state is local, so one agent can run many episodes at once."""
        config = self.config
        report = AgentReport()
        tokens = {"prompt_tokens": 0, "completion_tokens": 0}
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": await task_prompt(client, brief)},
        ]
        async with httpx.AsyncClient(timeout=config.timeout_s, headers=self._headers()) as http:
            turn = 0
            for turn in range(1, config.max_turns + 1):
                tools = openai_tools(await list_all_tools(client))
                payload = {
                    "model": config.model, "messages": messages, "tools": tools, "tool_choice": "auto",
                    "temperature": config.temperature,
                }  # fmt: skip
                body = await _complete(http, config, payload)
                usage = body.get("usage")
                for key in tokens:
                    count = usage.get(key) if isinstance(usage, dict) else None
                    tokens[key] += count if isinstance(count, int) else 0
                message = body["choices"][0]["message"]
                calls = _normalise_calls(message.get("tool_calls"), turn)
                # Echo only the fields every server accepts back.
                messages.append(
                    {"role": "assistant", "content": message.get("content")} | ({"tool_calls": calls} if calls else {})
                )
                if calls:
                    if await self._run_calls(client, brief, calls, messages, report):
                        break
                    continue
                content = message.get("content")
                text = content.strip() if isinstance(content, str) else ""
                if not text:
                    report.notes.append(f"turn {turn}: the model replied with neither text nor tool calls")
                    messages.append({"role": "user", "content": NUDGE})
                    continue
                if await self._submit_text(client, brief, text, messages, report):
                    break
            else:
                report.notes.append(f"no answer after {config.max_turns} model turns ({ENV_MAX_TURNS})")
        prompt, completion = tokens["prompt_tokens"], tokens["completion_tokens"]
        report.notes.append(f"usage: {turn} model turns, {prompt} prompt + {completion} completion tokens")
        return report

    async def _call(
        self, client: Client, brief: Brief, name: str, arguments: dict[str, Any], report: AgentReport
    ) -> types.CallToolResult | str:
        """One MCP call: its result, or (on an MCP error or a result the client rejects) the text to show instead."""
        report.calls += 1
        try:
            return await client.call_tool(name, arguments, read_timeout_seconds=brief.call_timeout_s)
        except MCPError as exc:
            report.notes.append(f"{name}: MCP error {exc.code}: {_one_line(exc.message)}")
            return f"Tool error: the call failed: {exc.message} (MCP error {exc.code})"
        except RuntimeError as exc:
            if not _rejected_result(exc):
                raise
            report.notes.append(f"{name}: the MCP client rejected the result: {_one_line(str(exc))}")
            return f"Tool error: the result could not be used: {exc}"

    async def _run_calls(
        self, client: Client, brief: Brief, calls: list[dict[str, Any]], messages: list[dict[str, Any]],
        report: AgentReport,
    ) -> bool:  # fmt: skip
        """Answer every tool call of one turn; True when an answer was accepted (the episode is over)."""
        for call in calls:
            name = call["function"]["name"]
            arguments, problem = parse_arguments(call["function"]["arguments"])
            if arguments is None:
                report.notes.append(f"{name or '(no name)'}: malformed arguments from the model")
                content = f"Tool error: {problem}. The tool was not called; send the arguments as one JSON object."
            else:
                outcome = await self._call(client, brief, name, arguments, report)
                if isinstance(outcome, str):
                    content = outcome
                else:
                    content = result_message(outcome)
                    if name == SUBMIT_TOOL and not outcome.is_error:
                        report.answer = str(arguments.get("answer"))
                        return True
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        return False

    async def _submit_text(
        self, client: Client, brief: Brief, text: str, messages: list[dict[str, Any]], report: AgentReport
    ) -> bool:
        """Submit a plain-text reply as the answer; True when accepted, else the refusal goes back to the model."""
        outcome = await self._call(client, brief, SUBMIT_TOOL, {"answer": text}, report)
        if not isinstance(outcome, str) and not outcome.is_error:
            report.answer = text
            return True
        refusal = outcome if isinstance(outcome, str) else result_message(outcome)
        report.notes.append(f"submitting the reply as the answer failed: {_one_line(refusal)}")
        messages.append({"role": "user", "content": f"Your reply was submitted as the answer and refused: {refusal}"})
        return False

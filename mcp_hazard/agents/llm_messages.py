"""What goes to the model and what comes back: requests every common server accepts, and replies in any dialect.

The request rules come from what real servers refuse. llama.cpp's server answers HTTP 500 to an assistant message
whose `content` is null, and vLLM and llama.cpp parse the arguments of echoed tool calls (some chat templates need an
object), so an echoed call must carry a JSON object. OpenAI refuses a tool name outside `^[a-zA-Z0-9_-]{1,64}$`, a
tool message whose `tool_call_id` answers no call, an assistant call left without its tool message, and unknown
top-level keys; an empty `tools` list is refused too, so it is left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from mcp_hazard.agents.drive import hints_of, text_of
from mcp_hazard.agents.llm_config import LlmConfig, one_line
from mcp_hazard.json_parse import loads

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ALIAS_STEM_CHARS = 50
NOTE_CHARS = 560  # with its prefix, a note stays within the run log's 600 characters


# -- tool names -----------------------------------------------------------------------------------------------------


def alias_of(name: str, digits: int = 8) -> str:
    """A valid OpenAI tool name for a served name that is not one: its valid characters plus a stable digest of the
    whole name (blake2b, never hash()), so the same name always gets the same alias."""
    stem = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:ALIAS_STEM_CHARS] or "tool"
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=16).hexdigest()[:digits]
    return f"{stem}_{digest}"


@dataclass
class ToolNames:
    """Served names <-> the names the model sees. Only names that break the OpenAI rule get an alias."""

    to_model: dict[str, str] = field(default_factory=dict)
    to_served: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, served: list[str]) -> ToolNames:
        names = cls()
        taken = {name for name in served if VALID_NAME.match(name)}
        for name in served:
            if VALID_NAME.match(name):
                alias = name
            else:
                digits = 8
                alias = alias_of(name, digits)
                while alias in taken:  # a clash with a served name is near impossible, but stay one-to-one
                    digits += 4
                    alias = alias_of(name, digits)
                taken.add(alias)
            names.to_model[name] = alias
            names.to_served[alias] = name
        return names

    def served(self, model_name: str) -> str:
        """The served name behind what the model called; an unknown name goes to the server as it is."""
        return self.to_served.get(model_name, model_name)


def openai_tools(tools: list[types.Tool], names: ToolNames) -> list[dict[str, Any]]:
    """MCP tools as OpenAI `function` tools: name (or alias), description, and the inputSchema as `parameters`."""
    return [
        {
            "type": "function",
            "function": {
                "name": names.to_model.get(tool.name, tool.name),
                "description": tool.description or "",
                "parameters": tool.input_schema or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


# -- requests -------------------------------------------------------------------------------------------------------


def request(config: LlmConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat-completions request with the standard keys only (an unknown key is a 400 on strict servers)."""
    payload: dict[str, Any] = {"model": config.model, "messages": messages}
    if tools:
        payload |= {"tools": tools, "tool_choice": "auto"}
    payload |= {"temperature": config.temperature, "max_tokens": config.max_tokens}
    if config.seed is not None:
        payload["seed"] = config.seed
    return payload


def assistant_message(content: str, calls: list[ToolCall]) -> dict[str, Any]:
    """The model's turn as echoed back: string content always, and each call with its id and object arguments."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.echo_arguments}} for c in calls
        ]
    return message


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def result_message(result: types.CallToolResult) -> str:
    """What the model reads back from one call: the served text (marked if it is an error), then the hints."""
    text = text_of(result) or "(the tool returned no text)"
    if result.is_error:
        text = f"Tool error: {text}"
    return "\n".join([text, *(f"Hint: {hint}" for hint in hints_of(result))])


# -- replies --------------------------------------------------------------------------------------------------------


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The model's arguments as an object, or why they are not one. Some servers send an object, most a string."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return None, f"the arguments must be a JSON object, got {type(raw).__name__}"
    try:
        value = loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}): {one_line(raw, 120)}"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}: {one_line(raw, 120)}"
    return value, None


@dataclass
class ToolCall:
    """One tool call of a reply: `name` as the model wrote it, `arguments` None when they were malformed."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    problem: str | None = None

    @property
    def echo_arguments(self) -> str:
        # Malformed arguments are echoed as {}: servers that parse echoed calls would fail the whole request on
        # them, and the tool message already quotes what the model sent.
        return json.dumps(self.arguments if self.arguments is not None else {}, ensure_ascii=False)


@dataclass
class Reply:
    content: str
    reasoning: str
    calls: list[ToolCall]
    finish_reason: str | None
    usage: dict[str, int]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _calls(raw: Any, turn: int, used_ids: set[str]) -> list[ToolCall]:
    """Tool calls with a unique id (the model's, else `call_TURN_INDEX`), whatever the server's dialect."""
    calls: list[ToolCall] = []
    for index, call in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(call, dict):
            continue
        raw_function = call.get("function")
        function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
        given = call.get("id")
        call_id = given if isinstance(given, str) and given.strip() and given not in used_ids else ""
        if not call_id:
            call_id = f"call_{turn}_{index}"
            while call_id in used_ids:
                call_id += "_"
        used_ids.add(call_id)
        name = function.get("name")
        name = name.strip() if isinstance(name, str) else ""
        arguments, problem = parse_arguments(function.get("arguments"))
        if not name:
            arguments, problem = None, "the call has no tool name"
        calls.append(ToolCall(call_id, name, arguments, problem))
    return calls


def parse_reply(body: dict[str, Any], turn: int, used_ids: set[str]) -> Reply:
    """choices[0] of a chat completion (its shape was checked by the endpoint) as a Reply."""
    choice = body["choices"][0]
    message = choice["message"]
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str):
        reasoning = message.get("reasoning")  # Ollama's and newer vLLM's name for it
    raw_usage = body.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    finish = choice.get("finish_reason")
    return Reply(
        content=_text(message.get("content")),
        reasoning=reasoning if isinstance(reasoning, str) else "",
        calls=_calls(message.get("tool_calls"), turn, used_ids),
        finish_reason=finish if isinstance(finish, str) else None,
        usage={k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)},
    )


def note(turn: int, what: str, text: str) -> str:
    """A bounded note of what the model said, for run.jsonl."""
    text = text.strip()
    return f"turn {turn}: model {what}: {text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + '…'}"

"""A STRICT fake OpenAI-compatible chat-completions endpoint over real HTTP (uvicorn + Starlette on 127.0.0.1),
playing scripted model turns.

Strict: it refuses what real servers refuse, with their statuses. `content: null` is an HTTP 500 (llama.cpp's
server); a message content that is not a string, an assistant tool call without an id or with arguments that are not
a JSON object (vLLM and llama.cpp parse them), a tool message answering no pending call, a call left without its tool
message, an unknown top-level key (`stream` is known, and must be false), a tool name outside OpenAI's rule, or a
missing `max_tokens` are HTTP 400. Every
refusal is also listed in `problems`, which a test asserts empty.

Scripts are stateless per conversation: the turn played is the number of assistant messages already in the request,
and with `scripts` the script is the one whose key occurs in the first user message (the task prompt). So a whole
`mcp-hazard run` in another process can use it, episode after episode. A turn's `before` replies (e.g. 500, 429)
are played first, one per repeat of the identical request: that is how retries are met. A turn with `raw` is a
broken endpoint at that point, every time.

`max_tokens` is honoured: a reply longer than that many words (content words, then each call's argument words) is
cut there, with `finish_reason: "length"`; a cut call keeps its cut arguments, as a real server's would be.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from conftest import WAIT_S
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

START_DEADLINE_S = WAIT_S
TOP_LEVEL = {"model", "messages", "tools", "tool_choice", "temperature", "max_tokens", "seed", "stream"}
MESSAGE_KEYS = {
    "system": {"role", "content", "name"}, "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls"}, "tool": {"role", "content", "tool_call_id"},
}  # fmt: skip
VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class Turn:
    """One scripted model turn: an assistant message, or (`status`/`raw`) a raw HTTP reply; `before` are raw replies
    played first, one per identical request."""

    message: dict[str, Any] | None = None
    status: int = 200
    raw: str | bytes | None = None  # bytes: sent as they are (a compressed body, with its Content-Encoding)
    headers: dict[str, str] = field(default_factory=dict)
    before: tuple[Turn, ...] = ()
    finish_reason: str | None = None
    stall_s: float = 0.0  # seconds to think before answering, as a busy single-slot server does


def call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """A tool call; `arguments` as a dict is serialised, as a string it is sent verbatim (so it can be malformed).
    No `call_id` means the model gave none (llama.cpp's older servers do that)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def tool_calls(*calls: dict[str, Any], content: str | None = None) -> Turn:
    """Calls as real servers send them: `content` null unless the model also said something."""
    return Turn(message={"role": "assistant", "content": content, "tool_calls": list(calls)})


def reply(content: str, reasoning: str | None = None) -> Turn:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return Turn(message=message)


def http_reply(status: int, body: str, retry_after: str | None = None) -> Turn:
    return Turn(status=status, raw=body, headers={"Retry-After": retry_after} if retry_after is not None else {})


def flaky(turn: Turn, *failures: Turn) -> Turn:
    """`turn`, after `failures` on the first tries of the same request."""
    return Turn(turn.message, turn.status, turn.raw, turn.headers, tuple(failures), turn.finish_reason, turn.stall_s)


def slow(turn: Turn, seconds: float) -> Turn:
    """`turn`, answered only after `seconds`."""
    return Turn(turn.message, turn.status, turn.raw, turn.headers, turn.before, turn.finish_reason, seconds)


class Refused(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


def _check_message(number: int, message: Any) -> None:
    if not isinstance(message, dict) or message.get("role") not in MESSAGE_KEYS:
        raise Refused(400, f"messages[{number}]: not a message with a known role")
    role = message["role"]
    extra = sorted(set(message) - MESSAGE_KEYS[role])
    if extra:
        raise Refused(400, f"messages[{number}] ({role}): unknown keys {extra}")
    if "content" not in message or message["content"] is None:
        raise Refused(500, f"messages[{number}] ({role}): content is null or missing")  # llama.cpp's answer
    if not isinstance(message["content"], str):
        raise Refused(400, f"messages[{number}] ({role}): content must be a string")


def _check_calls(number: int, calls: Any, seen: set[str]) -> list[str]:
    if not isinstance(calls, list) or not calls:
        raise Refused(400, f"messages[{number}]: tool_calls must be a non-empty list")
    ids = []
    for index, item in enumerate(calls):
        where = f"messages[{number}].tool_calls[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise Refused(400, f"{where}: no id")
        if item["id"] in seen:
            raise Refused(400, f"{where}: duplicate id {item['id']!r}")
        function = item.get("function")
        if item.get("type") != "function" or not isinstance(function, dict):
            raise Refused(400, f"{where}: not a function call")
        if not isinstance(function.get("name"), str) or not VALID_NAME.match(function["name"]):
            raise Refused(400, f"{where}: bad function name {function.get('name')!r}")
        try:
            arguments = json.loads(function["arguments"])
        except (KeyError, TypeError, ValueError):
            raise Refused(500, f"{where}: arguments are not JSON: {function.get('arguments')!r}") from None
        if not isinstance(arguments, dict):
            raise Refused(400, f"{where}: arguments are not a JSON object")
        seen.add(item["id"])
        ids.append(item["id"])
    return ids


def check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "messages must be a non-empty list")
    pending: list[str] = []
    seen: set[str] = set()
    for number, message in enumerate(messages):
        _check_message(number, message)
        role = message["role"]
        if role == "tool":
            if not pending or message.get("tool_call_id") != pending[0]:
                raise Refused(400, f"messages[{number}]: tool_call_id {message.get('tool_call_id')!r} answers no "
                              f"pending call (expected {pending[:1]})")  # fmt: skip
            pending.pop(0)
            continue
        if pending:
            raise Refused(400, f"messages[{number}]: tool calls {pending} have no tool message")
        if role == "assistant" and "tool_calls" in message:
            pending = _check_calls(number, message["tool_calls"], seen)
    if pending:
        raise Refused(400, f"tool calls {pending} have no tool message")
    if messages[-1]["role"] not in ("user", "tool"):
        raise Refused(400, f"the last message is {messages[-1]['role']!r}, not user or tool")


def check_request(body: Any) -> None:
    """Refuse what OpenAI, vLLM, llama.cpp or Ollama would refuse, with the status they use."""
    if not isinstance(body, dict):
        raise Refused(400, "request body is not an object")
    unknown = sorted(set(body) - TOP_LEVEL)
    if unknown:
        raise Refused(400, f"unknown top-level keys {unknown}")
    missing = [key for key in ("model", "messages", "max_tokens") if key not in body]
    if missing:
        raise Refused(400, f"missing {missing}")
    if not isinstance(body["model"], str) or not body["model"]:
        raise Refused(400, "model must be a non-empty string")
    tokens = body["max_tokens"]
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise Refused(400, "max_tokens must be a positive integer")
    if body.get("stream", False) is not False:  # `stream: false` is every server's default; this fake never streams
        raise Refused(400, "stream must be false: this endpoint does not stream")
    if "seed" in body and (isinstance(body["seed"], bool) or not isinstance(body["seed"], int)):
        raise Refused(400, "seed must be an integer")
    if "temperature" in body and not isinstance(body["temperature"], int | float):
        raise Refused(400, "temperature must be a number")
    if "tool_choice" in body and ("tools" not in body or body["tool_choice"] not in ("auto", "none", "required")):
        raise Refused(400, "tool_choice needs tools and one of auto, none, required")
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list) or not tools:
            raise Refused(400, "tools must be a non-empty list")
        names = []
        for index, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(function, dict):
                raise Refused(400, f"tools[{index}]: not a function tool")
            if not isinstance(function.get("name"), str) or not VALID_NAME.match(function["name"]):
                raise Refused(400, f"tools[{index}]: invalid function name {function.get('name')!r}")
            if not isinstance(function.get("parameters"), dict):
                raise Refused(400, f"tools[{index}]: parameters must be an object")
            names.append(function["name"])
        if len(set(names)) != len(names):
            raise Refused(400, "tool names are not unique")
    check_messages(body["messages"])


def _cut(message: dict[str, Any], budget: int) -> tuple[dict[str, Any], bool]:
    """The message cut at `budget` words (content first, then each call's arguments); True if it was cut."""
    message = copy.deepcopy(message)
    words = (message.get("content") or "").split()
    if len(words) > budget:
        message["content"] = " ".join(words[:budget])
        message.pop("tool_calls", None)
        return message, True
    budget -= len(words)
    calls = message.get("tool_calls") or []
    for index, item in enumerate(calls):
        argument_words = item["function"]["arguments"].split()
        if len(argument_words) > budget:
            item["function"]["arguments"] = " ".join(argument_words[:budget])
            message["tool_calls"] = calls[: index + 1]
            return message, True
        budget -= len(argument_words)
    return message, False


@dataclass
class FakeLlm:
    script: list[Turn] = field(default_factory=list)
    # Scripts keyed by a text of the first user message (the task prompt); `script` is the default.
    scripts: dict[str, list[Turn]] = field(default_factory=dict)
    api_key: str | None = None
    models_status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _refuse(self, status: int, text: str) -> JSONResponse:
        self.problems.append(f"request {len(self.requests)}: {text}")
        return JSONResponse({"error": {"message": text, "type": "invalid_request_error"}}, status_code=status)

    def _authorised(self, request: Request) -> bool:
        return self.api_key is None or request.headers.get("authorization") == f"Bearer {self.api_key}"

    def _script_for(self, messages: list[dict[str, Any]]) -> list[Turn] | None:
        first = next((m["content"] for m in messages if m["role"] == "user"), "")
        return next((turns for key, turns in self.scripts.items() if key in first), self.script or None)

    async def _models(self, request: Request) -> Response:
        if not self._authorised(request):
            return JSONResponse({"error": {"message": "Incorrect API key provided"}}, status_code=401)
        if self.models_status != 200:
            return Response("no such route", status_code=self.models_status, media_type="text/plain")
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    async def _completions(self, request: Request) -> Response:
        self.headers.append(dict(request.headers))
        try:
            body = json.loads(await request.body())
        except ValueError:
            return self._refuse(400, "request body is not JSON")
        self.requests.append(copy.deepcopy(body))
        if not self._authorised(request):
            return JSONResponse({"error": {"message": "Incorrect API key provided"}}, status_code=401)
        try:
            check_request(body)
        except Refused as refused:
            return self._refuse(refused.status, str(refused))
        messages = body["messages"]
        script = self._script_for(messages)
        index = sum(1 for m in messages if m["role"] == "assistant")
        if script is None or index >= len(script):
            return self._refuse(500, f"no scripted turn {index + 1} for this conversation")
        turn = script[index]
        key = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        attempt = self.attempts.get(key, 0)
        self.attempts[key] = attempt + 1
        if attempt < len(turn.before):
            turn = turn.before[attempt]
        if turn.stall_s:
            await anyio.sleep(turn.stall_s)
        if turn.raw is not None:
            return Response(turn.raw, status_code=turn.status, headers=turn.headers, media_type="text/plain")
        message, cut = _cut(turn.message or {"role": "assistant", "content": ""}, body["max_tokens"])
        finish = "length" if cut else turn.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop")
        return JSONResponse(
            {
                "id": f"chatcmpl-fake-{len(self.requests)}", "object": "chat.completion", "created": 0,
                "model": body["model"], "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
            status_code=turn.status,
        )  # fmt: skip

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._completions, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    def _server(self) -> uvicorn.Server:
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        return uvicorn.Server(config)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[FakeLlm]:
        """Serve on 127.0.0.1 (port chosen by the OS, so no race for it) inside the caller's event loop."""
        server = self._server()
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve)
            with anyio.fail_after(START_DEADLINE_S):
                while not server.started:
                    await anyio.sleep(0.01)
            self.port = int(server.servers[0].sockets[0].getsockname()[1])
            try:
                yield self
            finally:
                server.should_exit = True

    @contextmanager
    def in_thread(self) -> Iterator[FakeLlm]:
        """Serve from a thread, for tests that block on a subprocess (the CLI) while the fake answers it."""
        server = self._server()
        thread = threading.Thread(target=server.run, name="fake-llm", daemon=True)
        thread.start()
        deadline = time.monotonic() + START_DEADLINE_S
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the fake LLM endpoint did not start")
            time.sleep(0.01)
        self.port = int(server.servers[0].sockets[0].getsockname()[1])
        try:
            yield self
        finally:
            server.should_exit = True
            thread.join(START_DEADLINE_S)

"""A fake OpenAI-compatible chat-completions endpoint over real HTTP (uvicorn + Starlette on 127.0.0.1), playing
scripted model turns.

Each scripted turn is one response: tool calls, plain content, or a raw HTTP reply (to play a broken endpoint). The
fake records every request body it receives and checks that it looks like a tool-calling chat completion request
(`model`, `messages`, `tools`); a request that does not is answered 400 and listed in `problems`.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

START_DEADLINE_S = 20.0
_ids = itertools.count(1)


@dataclass
class Turn:
    """One scripted response: an assistant message, or (`status`/`raw`) a raw HTTP reply."""

    message: dict[str, Any] | None = None
    status: int = 200
    raw: str | None = None


def call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """A tool call; `arguments` as a dict is serialised, as a string it is sent verbatim (so it can be malformed)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def tool_calls(*calls: dict[str, Any]) -> Turn:
    numbered = [{**c, "id": c["id"] or f"call_{next(_ids)}"} for c in calls]
    return Turn(message={"role": "assistant", "content": None, "tool_calls": numbered})


def reply(content: str) -> Turn:
    return Turn(message={"role": "assistant", "content": content})


def http_reply(status: int, body: str) -> Turn:
    return Turn(status=status, raw=body)


@dataclass
class FakeLlm:
    script: list[Turn]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _problem(self, text: str) -> JSONResponse:
        self.problems.append(text)
        return JSONResponse({"error": {"message": text, "type": "invalid_request_error"}}, status_code=400)

    async def _completions(self, request: Request) -> Response:
        self.headers.append(dict(request.headers))
        try:
            body = json.loads(await request.body())
        except ValueError:
            return self._problem("request body is not JSON")
        self.requests.append(copy.deepcopy(body))
        if not isinstance(body, dict):
            return self._problem("request body is not an object")
        missing = [key for key in ("model", "messages", "tools") if key not in body]
        if missing:
            return self._problem(f"request {len(self.requests)} lacks {missing}")
        if not isinstance(body["messages"], list) or not isinstance(body["tools"], list):
            return self._problem(f"request {len(self.requests)}: messages and tools must be lists")
        index = len(self.requests) - 1
        if index >= len(self.script):
            self.problems.append(f"request {index + 1} came after the script ended")
            return JSONResponse({"error": {"message": "fake LLM: script exhausted"}}, status_code=500)
        turn = self.script[index]
        if turn.raw is not None:
            return Response(turn.raw, status_code=turn.status, media_type="text/plain")
        message = turn.message or {}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return JSONResponse(
            {
                "id": f"chatcmpl-fake-{index + 1}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
            status_code=turn.status,
        )

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])

    @asynccontextmanager
    async def running(self) -> AsyncIterator[FakeLlm]:
        """Serve on 127.0.0.1 (port chosen by the OS, so no race for it) inside the caller's event loop."""
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
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

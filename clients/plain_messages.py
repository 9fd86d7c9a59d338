"""Plain-text chat messages for OpenAI-compatible local servers, used by the framework examples beside this file.

The OpenAI Agents SDK and pydantic-ai write `content: null` beside an assistant's tool calls, and the Agents SDK sends
a tool's result as a list of text parts. OpenAI takes both; llama.cpp's server answers `null` with HTTP 500, and
several servers refuse the list. `PlainTextMessages` is an HTTP transport for the OpenAI client that sends the same
text as plain strings (`""` for none), which every server takes; nothing else of the request changes.
"""

import json

import httpx2  # the HTTP client of the openai package (3.x)


class PlainTextMessages(httpx2.AsyncBaseTransport):
    """Every chat-completions request with each message's content as one string."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST" and request.url.path.endswith("/chat/completions"):
            body = json.loads(await request.aread())
            for message in body.get("messages", []):
                content = message.get("content")
                if content is None or isinstance(content, list):
                    message["content"] = "".join(part.get("text", "") for part in content or [])
            headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
            request = httpx2.Request(request.method, request.url, headers=headers, content=json.dumps(body).encode())
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

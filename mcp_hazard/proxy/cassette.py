"""Replay a cassette: serve the replies a real server gave, without the server, so a run repeats exactly in CI.

A cassette is JSONL: a header line `{"cassette": 1, "upstream": {...}}` (what the server said about itself), then one
line per exchange `{"request": "METHOD PARAMS", "result": ...}` or `{..., "error": {"code", "message"}}`, with the
progress the server reported, in the order they happened. A request is matched by its method and parameters (JSON
with sorted keys, `_meta` left out). The n-th identical request of an episode gets the n-th recorded reply; past the
last one, the last one again. A request the cassette never saw is answered with a JSON-RPC error (-32603) that names
it, and traced as `upstream_error`: record it first (`--record`). A cassette may come from someone else: each line is
read within the limits of a server's frame (twice its size, as deep), and a damaged one is one line naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from pydantic import BaseModel, ValidationError

from mcp_hazard.errors import UserError
from mcp_hazard.proxy.server_frames import load_bounded
from mcp_hazard.proxy.upstream import LOST, Progress, Upstream, UpstreamError, request_key
from mcp_hazard.proxy.upstream_errors import unfit
from mcp_hazard.proxy.upstream_info import UpstreamInfo
from mcp_hazard.regular_file import NotRegularFile, open_regular
from mcp_hazard.server.frames import MAX_FRAME_BYTES

MAX_CASSETTE_BYTES = 256 * 1024 * 1024
MAX_CASSETTE_LINE_BYTES = 2 * MAX_FRAME_BYTES
"""One exchange: a recorded answer came in one frame (at most MAX_FRAME_BYTES); its request and progress beside it."""


@dataclass
class Cassette:
    path: str
    upstream: dict[str, Any]
    replies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def load_cassette(path: str) -> Cassette:
    """Read a cassette; a damaged one is a one-line error naming the line."""
    try:
        with open_regular(path, binary=True) as handle:  # a FIFO named by mistake would block `open`
            raw = handle.read(MAX_CASSETTE_BYTES + 1)
    except NotRegularFile as exc:
        raise UserError(f"{path}: cannot read cassette: {exc.kind}, not a file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read cassette: {exc.strerror or exc}") from None
    if len(raw) > MAX_CASSETTE_BYTES:
        raise UserError(f"{path}: cassette is larger than {MAX_CASSETTE_BYTES} bytes")
    cassette: Cassette | None = None
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_CASSETTE_LINE_BYTES:
            raise UserError(f"{path}:{number}: a line of {len(line):,} bytes, over the limit of "
                            f"{MAX_CASSETTE_LINE_BYTES:,}")  # fmt: skip
        try:
            data = load_bounded(line)
        except ValueError as exc:
            raise UserError(f"{path}:{number}: {exc}") from None
        if cassette is None:
            if not isinstance(data, dict) or data.get("cassette") != 1 or not isinstance(data.get("upstream"), dict):
                raise UserError(f"{path}:{number}: not a cassette: the first line must be its header "
                                '{"cassette": 1, "upstream": {...}} (write one with --record)')  # fmt: skip
            cassette = Cassette(path=path, upstream=data["upstream"])
            continue
        if not isinstance(data, dict) or not isinstance(data.get("request"), str):
            raise UserError(f"{path}:{number}: expected an exchange with a 'request'")
        if "result" not in data and not isinstance(data.get("error"), dict):
            raise UserError(f"{path}:{number}: an exchange needs a 'result' or an 'error'")
        error = data.get("error")
        if error is not None and (type(error.get("code")) is not int or not isinstance(error.get("message"), str)):
            raise UserError(f"{path}:{number}: an exchange's error needs an integer 'code' and a text 'message'")
        if error is None:
            _check_result(data["request"].partition(" ")[0], data.get("result"), f"{path}:{number}")
        cassette.replies.setdefault(data["request"], []).append(data)
    if cassette is None:
        raise UserError(f"{path}: the cassette is empty (write one with --record)")
    return cassette


_RESULTS: dict[str, type[BaseModel]] = {
    "tools/list": types.ListToolsResult, "tools/call": types.CallToolResult,
    "resources/list": types.ListResourcesResult, "resources/templates/list": types.ListResourceTemplatesResult,
    "resources/read": types.ReadResourceResult, "resources/subscribe": types.EmptyResult,
    "resources/unsubscribe": types.EmptyResult, "prompts/list": types.ListPromptsResult,
    "prompts/get": types.GetPromptResult, "completion/complete": types.CompleteResult,
    "logging/setLevel": types.EmptyResult, "ping": types.EmptyResult,
}  # fmt: skip
"""The SDK's model of each answer the proxy passes on (upstream._send): what a live server's answer must fit."""


def _check_result(method: str, result: Any, where: str) -> None:
    """A recorded result the SDK would have refused from a live server is refused at load, by its line: served, it
    would reach the client as a result the protocol does not allow."""
    model = _RESULTS.get(method)
    if model is None:
        return  # a request the proxy never sends: never replayed
    try:
        model.model_validate(result)
    except ValidationError as exc:
        raise UserError(f"{where}: {unfit(method, exc).message}") from None


class ReplayUpstream(Upstream):
    """One episode's view of a cassette: its own count of each request, so episodes replay independently."""

    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette
        recorded = cassette.upstream.get("via")
        self.info = UpstreamInfo.from_json(cassette.upstream, {"cassette": cassette.path, "recorded": recorded})
        self.seen: dict[str, int] = {}

    async def request(self, method: str, params: dict[str, Any] | None = None, progress: Progress | None = None
                      ) -> dict[str, Any]:  # fmt: skip
        key = request_key(method, params)
        replies = self.cassette.replies.get(key)
        if not replies:
            shown = key if len(key) <= 200 else key[:197] + "..."
            raise UpstreamError(
                LOST, f"the cassette {self.cassette.path} has no reply to {shown}; record it with --record"
            )
        count = self.seen.get(key, 0)
        self.seen[key] = count + 1
        reply = replies[min(count, len(replies) - 1)]
        if progress is not None:
            for step in reply.get("progress") or []:
                if isinstance(step, list) and len(step) == 3:
                    await progress(step[0], step[1], step[2])
        error = reply.get("error")
        if isinstance(error, dict):
            raise UpstreamError(error["code"], error["message"])
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

"""Malformed JSON-RPC frames: refused with a one-line JSON-RPC error, recorded in the trace, and the server goes on.

The SDK (mcp 2.3) drops a stdio line it cannot parse or validate without any reply (a lone surrogate escape,
10,000-deep nesting, `params` as a list, a batch, a bare number), so the client waits forever; over HTTP it answers,
but with pydantic's multi-line error text and `id: null` even when the id is plain to see. Neither reaches our
handlers, so nothing would be traced. `check_frame` looks at every incoming frame first, in both transports, and says
what is wrong with it; frames it passes go to the SDK untouched. Codes follow JSON-RPC 2.0: -32700 for text that is
not JSON (or not valid Unicode), -32600 for JSON that is not one request/notification/response, -32602 for a known
method's params of the wrong shape.

Where it is plugged in: stdio.py reads stdin lines itself and hands the SDK only lines that pass; over HTTP,
`FrameGuard` is an ASGI wrapper around the MCP endpoint that reads POST bodies before the SDK does.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

import mcp_types as types
import orjson
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_hazard.errors import first_error
from mcp_hazard.json_parse import refuse_constant
from mcp_hazard.logs import LogBudget
from mcp_hazard.server.bodies import BodyTooLarge, ClientGone, read_body
from mcp_hazard.trace.storage import StorageError

if TYPE_CHECKING:
    from mcp_hazard.server.served_episode import Episode

MAX_FRAME_BYTES = 4 * 1024 * 1024
"""One frame (a stdio line, an HTTP body). Tool arguments have their own, smaller limits (scenario/arguments.py)."""
MAX_FRAME_DEPTH = 64
"""Objects and arrays inside each other in one frame: twice what tool arguments may use, well below the SDK parser's
own limit (about 255), so a frame we pass is never one the SDK refuses for depth."""
MAX_MESSAGE_CHARS = 200

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Refusal:
    """Why a frame is refused. `id` is the request id when it could be read (else None: JSON-RPC's null), `reply`
    is False for a notification (JSON-RPC never answers one; it is still recorded)."""

    code: int
    message: str
    id: str | int | None = None
    method: str | None = None
    reply: bool = True

    def response(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 3] + "..."


def _request_models() -> dict[str, type[BaseModel]]:
    """Method name -> the SDK's request model, from the client request union, so params are checked per method."""
    models: dict[str, type[BaseModel]] = {}
    for model in get_args(types.ClientRequest):
        field = model.model_fields.get("method")
        literal = get_args(field.annotation) if field is not None else ()
        if literal and isinstance(literal[0], str):
            models[literal[0]] = model
    return models


_REQUESTS = _request_models()


def too_deep(value: Any) -> bool:
    """Whether `value` nests deeper than MAX_FRAME_DEPTH (iterative: the check cannot itself exhaust the stack); the
    proxy's frames use it too."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_FRAME_DEPTH:
                return True
            stack.extend((item, depth + 1) for item in (node.values() if isinstance(node, dict) else node))
    return False


def _lone_surrogate(value: Any) -> bool:
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _valid_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


_CALL_KEYS = frozenset(("name", "arguments", "_meta"))


def _plain_call(params: Any) -> bool:
    """Whether `tools/call` params have the shape every client sends and the SDK's model certainly accepts: a name,
    arguments as an object or null, `_meta` as an object without a progress token (the one key it types). Such
    params skip the model here; the SDK validates them again anyway."""
    if type(params) is not dict or not params.keys() <= _CALL_KEYS or type(params.get("name")) is not str:
        return False
    arguments, meta = params.get("arguments"), params.get("_meta")
    if arguments is not None and type(arguments) is not dict:
        return False
    return meta is None or (type(meta) is dict and "progressToken" not in meta and "progress_token" not in meta)


def _params_problem(model: type[BaseModel], frame: dict[str, Any]) -> str | None:
    if frame["method"] == "tools/call" and _plain_call(frame.get("params")):
        return None
    try:
        model.model_validate({"method": frame["method"], "params": frame.get("params")}, by_name=False)
    except ValidationError as exc:
        where, message = first_error(exc)
        return _one_line(f"{where}: {message}")
    return None


def check_frame(raw: bytes | str) -> Refusal | None:
    """None when the SDK may have the frame, else why it is refused. Never raises."""
    found = parse_frame(raw)
    return found if isinstance(found, Refusal) else None


def parse_frame(raw: bytes | str) -> dict[str, Any] | Refusal:
    """The frame when it is sound, else why it is refused (a relay forwards the frame it parsed). Never raises."""
    if len(raw) > MAX_FRAME_BYTES:
        return Refusal(INVALID_REQUEST, f"Invalid Request: a frame of {len(raw)} bytes exceeds {MAX_FRAME_BYTES}")
    quick = _quick_parse(raw) if isinstance(raw, bytes) else None
    if quick is not None:
        frame, checked = quick
        return _judge(frame, checked)
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            readable = readable_id(raw.decode("utf-8", "surrogateescape"))
            return Refusal(PARSE_ERROR, f"Parse error: not UTF-8 text (byte {exc.start})", readable)
    else:
        text = raw
    try:
        frame = json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        message = _one_line(f"Parse error: {exc.msg} at line {exc.lineno} column {exc.colno}")
        return Refusal(PARSE_ERROR, message, readable_id(text))
    except ValueError as exc:  # NaN, Infinity
        return Refusal(PARSE_ERROR, _one_line(f"Parse error: {exc}"), readable_id(text))
    except RecursionError:
        message = f"Invalid Request: nested deeper than the limit of {MAX_FRAME_DEPTH} levels"
        return Refusal(INVALID_REQUEST, message, readable_id(text))
    return _judge(frame, False)


_TOKEN = re.compile(r'(?s)"[^"\\]*(?:\\.[^"\\]*)*\\?(?:"|\Z)|[][{}]')
"""A JSON string (escapes and all; one cut off by the frame's end runs to it) or a bracket: all a scan needs to
know how deep it is. Once a string starts it always matches, so no input makes the scan backtrack."""
_ID_VALUE = re.compile(r'\s*:\s*("(?:[^"\\\x00-\x1f]|\\.){0,1024}"|-?(?:0|[1-9][0-9]{0,30}))\s*[,}]')
"""After the key `"id"`: a string or an integer, then the next member or the object's end."""
_KEY = re.compile(r"\s*:")
MAX_ID_SCAN = 65_536
"""Characters of a frame a scan for its id reads (an id comes early in every client's frames): at most about 40 ms."""


def readable_id(text: str) -> str | int | None:
    """The top-level `"id"` of a frame the strict parser refused (NaN in it, nested too deeply, cut short, not
    UTF-8 somewhere else), so the error can still be matched to its request; None when it cannot be read for
    sure. A bounded scan of the first MAX_ID_SCAN characters: strings and brackets only, depth counted."""
    if not text.lstrip().startswith("{"):
        return None
    depth = 0
    for token in _TOKEN.finditer(text, 0, MAX_ID_SCAN):
        found = token.group()
        if found[0] == '"':
            if depth == 1 and found == '"id"':
                value = _ID_VALUE.match(text, token.end())
                if value is None:  # the key with a value that is no id, or a member's value that reads "id"
                    if _KEY.match(text, token.end()):
                        return None
                    continue
                try:
                    parsed = json.loads(value.group(1))
                except ValueError:
                    return None
                return parsed if _valid_id(parsed) and not _lone_surrogate(parsed) else None
        elif found in "{[":
            depth += 1
        else:
            depth -= 1
            if depth <= 0:  # the top-level object ended without an id
                return None
    return None


_DIGITS_ONLY = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
"""Every ASCII digit as `0`, every other byte as a space: a run of digits stays a run of `0`s."""
_LONG_NUMBER = b"0" * 19


def _quick_parse(raw: bytes) -> tuple[Any, bool] | None:
    """Every frame is parsed before the SDK parses it again, so the common frame takes the short way: orjson, which
    refuses what the exact way must word (invalid UTF-8, a lone surrogate escape, NaN, deep nesting: None, and the
    exact way parses it) and reads the rest as `json` does, except integers of 19 digits or more (it makes floats of
    them: those frames go the exact way too). The second value says the frame is known to hold no lone surrogate and
    no nesting beyond the limit (a frame with at most MAX_FRAME_DEPTH brackets cannot nest deeper)."""
    if _LONG_NUMBER in raw.translate(_DIGITS_ONLY):  # a tenth of what `re` takes to look for [0-9]{19}
        return None
    try:
        frame = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return frame, raw.count(b"{") + raw.count(b"[") <= MAX_FRAME_DEPTH


def _judge(frame: Any, checked: bool) -> dict[str, Any] | Refusal:
    """The parsed frame, or why it is refused; `checked`: its depth and strings are known to be fine."""
    if not isinstance(frame, dict):
        kind = "an array (batches are not supported)" if isinstance(frame, list) else type(frame).__name__
        return Refusal(INVALID_REQUEST, f"Invalid Request: a frame must be one JSON object, got {kind}")
    raw_id = frame.get("id")
    frame_id = raw_id if _valid_id(raw_id) and (checked or not _lone_surrogate(raw_id)) else None
    method = frame.get("method") if isinstance(frame.get("method"), str) else None
    notification = "id" not in frame and method is not None

    def refuse(code: int, message: str) -> Refusal:
        safe_method = method if method is None or not _lone_surrogate(method) else None
        return Refusal(code, message, frame_id, safe_method, reply=not notification)

    if not checked and too_deep(frame):
        return refuse(INVALID_REQUEST, f"Invalid Request: nested deeper than the limit of {MAX_FRAME_DEPTH} levels")
    if not checked and _lone_surrogate(frame):
        return refuse(PARSE_ERROR, "Parse error: a lone surrogate escape (\\ud800 to \\udfff) is not valid Unicode")
    if frame.get("jsonrpc") != "2.0":
        return refuse(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "id" in frame and not _valid_id(raw_id):
        return refuse(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    if "method" in frame and method is None:
        return refuse(INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if method is None:
        if "id" in frame and ("result" in frame) != ("error" in frame):
            return frame  # a response to a request of ours
        return refuse(INVALID_REQUEST, 'Invalid Request: no "method", and not a response with "result" or "error"')
    if "params" in frame and not isinstance(frame["params"], dict):
        got = "an array" if isinstance(frame["params"], list) else json.dumps(frame["params"])[:40]
        return refuse(INVALID_PARAMS, f"Invalid params: params must be an object, got {got}")
    model = _REQUESTS.get(method)
    if model is not None and not notification:
        problem = _params_problem(model, frame)
        if problem:
            return refuse(INVALID_PARAMS, f"Invalid params: {problem}")
    return frame


# -- HTTP ----------------------------------------------------------------------------------------------------------

Recorder = Callable[[str, Refusal], None]
"""Records a refusal in the trace of the episode with this id (a no-op when there is none)."""


class FrameGuard:
    """ASGI wrapper for `/episodes/{episode_id}/mcp`: a POST body is read (up to MAX_FRAME_BYTES), checked, and
    either refused with a JSON-RPC error (HTTP 400, as the SDK answers its own refusals) or replayed to the SDK."""

    def __init__(self, app: ASGIApp, record: Recorder) -> None:
        self.app = app
        self.record = record

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        oversize = False
        try:  # a declared length over the limit is refused unread; a chunked body is read up to the limit only
            body = await read_body(scope, receive, MAX_FRAME_BYTES)
            refusal = check_frame(body)
        except ClientGone:
            return
        except BodyTooLarge as exc:
            body, oversize = b"", True
            refusal = Refusal(INVALID_REQUEST, f"Invalid Request: {exc.told('a frame')}")
        if refusal is not None:
            episode_id = str(scope.get("path_params", {}).get("episode_id", ""))
            self.record(episode_id, refusal)
            await _send_json(send, 400, refusal.response(), close=oversize)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _send_json(send: Send, status: int, payload: dict[str, Any], *, close: bool = False) -> None:
    """`close`: the rest of the request body was left unread, so the connection ends with this response."""
    body = json.dumps(payload, ensure_ascii=True).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


UNTRACED_LINES = 20
UNTRACED_REFUSALS = LogBudget(
    UNTRACED_LINES, f"the next refused frames with no episode to trace them in go unlogged after {UNTRACED_LINES}"
)
"""Log lines for frames refused where there is no episode to trace them in (it was released, or has not begun)."""


def episode_recorder(lookup: Callable[[str], Episode | None]) -> Recorder:
    """A Recorder that writes `frame_refused` to the trace of the episode `lookup` finds for the path's id."""

    def record(episode_id: str, refusal: Refusal) -> None:
        episode = lookup(episode_id)
        if episode is None:
            UNTRACED_REFUSALS.warning("frame refused", code=refusal.code, reason=refusal.message, episode=episode_id)
        else:
            with contextlib.suppress(StorageError):  # the trace has said once that it cannot be written
                episode.record_frame_refused(code=refusal.code, message=refusal.message, id=refusal.id,
                                             method=refusal.method, replied=refusal.reply)  # fmt: skip

    return record

"""Frames are parsed the short way (orjson) when that reads them as `json` would; everything else, and every frame
that is refused, goes the exact way, so what passes and what a refusal says never depend on which way was taken."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_hazard.server.frames import _REQUESTS, Refusal, _plain_call, _quick_parse, parse_frame

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12,
)  # fmt: skip
EDGES = [
    b"01", b"1.", b"[1,]", b'{"a":1,}', b"\xef\xbb\xbf{}", b'"\t"', b"NaN", b"Infinity", b"1e400", b'"\\ud800"',
    b'{"a":1,"a":2}', b"1" * 25, b" {} ", b"{}\n", b"\xff", b'"\\uD83D\\uDE00"', b"[" * 70 + b"]" * 70, b"-0",
]  # fmt: skip
"""Frames where the two ways could part: each is tried on every run (`with_edges`), besides being drawn."""
TEXTS = st.one_of(
    JSON_VALUES.map(lambda value: json.dumps(value).encode()),
    JSON_VALUES.map(lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8")),
    st.sampled_from(EDGES),
    st.binary(max_size=12),
)  # fmt: skip


def with_edges(test: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """Every frame of EDGES as an explicit example of a property over TEXTS: no luck of the draw decides whether an
    edge is tried, so a few hundred random examples suffice next to them."""
    for raw in reversed(EDGES):
        test = example(raw)(test)
    return test


def _same(one: Any, two: Any) -> bool:
    if isinstance(one, float) and isinstance(two, float) and math.isnan(one) and math.isnan(two):
        return True
    return type(one) is type(two) and one == two


@settings(max_examples=400, deadline=None)
@with_edges
@given(TEXTS)
def test_the_short_way_reads_what_json_reads(raw: bytes) -> None:
    quick = _quick_parse(raw)
    if quick is None:
        return
    frame, _ = quick
    expected = json.loads(raw.decode("utf-8"))
    assert _same(frame, expected) or frame == expected, (raw, frame, expected)
    assert json.dumps(frame, sort_keys=True) == json.dumps(expected, sort_keys=True)


@settings(max_examples=400, deadline=None)
@with_edges
@given(TEXTS)
def test_a_frame_is_judged_the_same_either_way(raw: bytes) -> None:
    quick = parse_frame(raw)
    try:
        exact = parse_frame(raw.decode("utf-8"))  # a str always goes the exact way
    except UnicodeDecodeError:
        return
    assert quick == exact


METAS = st.dictionaries(st.sampled_from(["progressToken", "progress_token", "a", "io.x/y"]), JSON_VALUES, max_size=3)
CALL_PARAMS = st.one_of(
    st.fixed_dictionaries(  # the usual shape, with wrong types mixed in
        {"name": st.one_of(st.text(max_size=5), JSON_VALUES)},
        optional={
            "arguments": st.one_of(st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=2), JSON_VALUES),
            "_meta": st.one_of(METAS, JSON_VALUES),
        },
    ),
    st.dictionaries(
        st.sampled_from(["name", "arguments", "_meta", "task", "requestState", "progress_token"]),
        st.one_of(JSON_VALUES, METAS),
        max_size=4,
    ),
)


@settings(max_examples=400, deadline=None)
@given(CALL_PARAMS)
def test_tools_call_params_passed_without_the_model_are_ones_the_model_accepts(params: dict[str, Any]) -> None:
    frame = {"method": "tools/call", "params": params}
    if _plain_call(params):
        _REQUESTS["tools/call"].model_validate(frame, by_name=False)  # raises if the short way passed a bad one


def test_the_common_call_takes_the_short_way_and_a_wrong_one_is_still_worded() -> None:
    sent = {"name": "get_fare", "arguments": {"flight_id": "AU-426"}, "_meta": {"io.x/clientInfo": {"name": "c"}}}
    assert _plain_call(sent)
    assert not _plain_call({**sent, "_meta": {"progressToken": 1.5}})
    frame = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1.5}}}'
    refused = parse_frame(frame)
    assert isinstance(refused, Refusal) and refused.code == -32602 and "progressToken" in refused.message
    refused = parse_frame(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}')
    assert isinstance(refused, Refusal) and "params.name" in refused.message


@pytest.mark.parametrize(
    ("raw", "short"),
    [
        (b'{"a":' + b"9" * 18 + b"}", True),
        (b'{"a":' + b"9" * 19 + b"}", False),  # 19 digits or more: orjson could read a float, so the exact way
        (b'{"a":"' + b"1" * 30 + b'"}', False),  # a digit run in a string goes the exact way too (same result)
        (b'{"a":[' + b"1" * 10 + b"," + b"1" * 10 + b"]}", True),  # two runs apart are two short numbers
    ],
)
def test_long_digit_runs_go_the_exact_way(raw: bytes, short: bool) -> None:
    assert (_quick_parse(raw) is not None) is short
    assert parse_frame(raw) == parse_frame(raw.decode("utf-8"))

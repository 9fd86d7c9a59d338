"""Frames are parsed the short way (orjson) when that reads them as `json` would; everything else, and every frame
that is refused, goes the exact way, so what passes and what a refusal says never depend on which way was taken."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_hazard.server.frames import _quick_parse, parse_frame

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12,
)  # fmt: skip
TEXTS = st.one_of(
    JSON_VALUES.map(lambda value: json.dumps(value).encode()),
    JSON_VALUES.map(lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8")),
    st.sampled_from(
        [b"01", b"1.", b"[1,]", b'{"a":1,}', b"\xef\xbb\xbf{}", b'"\t"', b"NaN", b"Infinity", b"1e400", b'"\\ud800"',
         b'{"a":1,"a":2}', b"1" * 25, b" {} ", b"{}\n", b"\xff", b'"\\uD83D\\uDE00"', b"[" * 70 + b"]" * 70, b"-0"]
    ),
    st.binary(max_size=12),
)  # fmt: skip


def _same(one: Any, two: Any) -> bool:
    if isinstance(one, float) and isinstance(two, float) and math.isnan(one) and math.isnan(two):
        return True
    return type(one) is type(two) and one == two


@settings(max_examples=3000, deadline=None)
@given(TEXTS)
def test_the_short_way_reads_what_json_reads(raw: bytes) -> None:
    quick = _quick_parse(raw)
    if quick is None:
        return
    frame, _ = quick
    expected = json.loads(raw.decode("utf-8"))
    assert _same(frame, expected) or frame == expected, (raw, frame, expected)
    assert json.dumps(frame, sort_keys=True) == json.dumps(expected, sort_keys=True)


@settings(max_examples=1500, deadline=None)
@given(TEXTS)
def test_a_frame_is_judged_the_same_either_way(raw: bytes) -> None:
    quick = parse_frame(raw)
    try:
        exact = parse_frame(raw.decode("utf-8"))  # a str always goes the exact way
    except UnicodeDecodeError:
        return
    assert quick == exact

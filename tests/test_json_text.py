"""orjson writes what json would write, or the value goes the exact way: the bytes never depend on which wrote them."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_hazard.json_text import compact, indented

FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-05, 1e-4, 0.00011, 1e16, 1e15, 9999999999999998.0, 5e-324, -0.0, 1e22, 123.456]),
)
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=8) | st.sampled_from(
    ["fare-class", "1e5", "0.00001", "null", "e-1", "\x00\x1f\x7f\u2028", "😀"]
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), FLOATS, TEXT)
KEYS = st.one_of(TEXT, st.integers(-3, 3), st.booleans(), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=12,
)


def _pydantic_json(value: Any) -> Any:
    """What the trace wrote before orjson: pydantic's JSON mode turns NaN and infinities into null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list | tuple):
        return [_pydantic_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _pydantic_json(item) for key, item in value.items()}
    return value


@settings(max_examples=1000, deadline=None)
@given(VALUES)
def test_compact_is_json_or_nothing(value: Any) -> None:
    text = compact(value)
    if text is not None:
        expected = json.dumps(_pydantic_json(value), ensure_ascii=False, separators=(",", ":"))
        assert text == expected.encode("utf-8")


@settings(max_examples=1000, deadline=None)
@given(VALUES)
def test_indented_is_exactly_json(value: Any) -> None:
    try:
        expected = json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return
    assert indented(value) == expected


def test_values_only_json_can_write_go_the_exact_way() -> None:
    assert compact({1: "a"}) is None  # json writes the key as "1"; the caller's exact path decides
    assert compact(2**70) is None
    assert compact("\ud800") is None
    assert compact([1e-05]) is None and compact([1e16]) is None
    assert compact({"a": 1.5, "b": "fare-class"}) == b'{"a":1.5,"b":"fare-class"}'
    assert indented({"a": float("nan")}) == '{\n  "a": NaN\n}'

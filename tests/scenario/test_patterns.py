"""`search` answers whether a pattern matches from RE2's own program; it must say what RE2's `search` says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_hazard.scenario.patterns import compile_pattern, matcher, search

PATTERNS = st.sampled_from(
    ["^AU-[0-9]{3}$", "b", "^$", "", "é+", "^.{2}$", "[^a-z]", "(a|b)*c", "^\\d{4}-\\d{2}-\\d{2}$", "\\bx\\b", "^ü"]
)
TEXTS = st.text(alphabet=st.sampled_from(list("abcxAU-0123456789 éü€😀")), max_size=12)


@settings(max_examples=2000, deadline=None)
@given(pattern=PATTERNS, text=TEXTS)
def test_search_says_what_re2_search_says(pattern: str, text: str) -> None:
    expected = compile_pattern(pattern).search(text) is not None
    assert search(pattern, text) == expected
    assert matcher(pattern)(text) == expected


def test_text_that_is_not_unicode_and_patterns_re2_refuses_match_nothing() -> None:
    assert search("a", "a\ud800") is False and matcher("a")("a\ud800") is False
    assert search("(a)\\1", "aa") is False and matcher("(a)\\1")("aa") is False


@settings(max_examples=200, deadline=None)
@given(pattern=PATTERNS, texts=st.lists(st.one_of(TEXTS, st.text(min_size=120, max_size=140)), max_size=150))
def test_a_matcher_that_remembers_answers_says_what_re2_says_every_time(pattern: str, texts: list[str]) -> None:
    matches = matcher(pattern)  # one matcher for all, as a compiled schema check holds it: answers are remembered
    compiled = compile_pattern(pattern)
    for text in texts + texts[::-1]:  # each text asked again, after more than the matcher keeps
        assert matches(text) == (compiled.search(text) is not None), text

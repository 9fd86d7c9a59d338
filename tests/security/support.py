"""Shared by the security tests: a scenario full of patterns that backtracking regex engines choke on, and a
process's own peak memory."""
# ruff: noqa: E501  (the e-mail pattern is a classic ReDoS case and must stay one YAML line)

from __future__ import annotations

HOSTILE_SCENARIO = r"""
format: 1
id: hostile
title: Patterns that stall a backtracking regex engine
tools:
  - name: probe
    description: Echo a word, after checking every argument against a pattern.
    input_schema:
      type: object
      properties:
        word: {type: string, pattern: '^(a+)+$'}
        alt: {type: string, pattern: '^(a|a)*$'}
        pairs: {type: string, pattern: '^(a|aa)+$'}
        words: {type: string, pattern: '^(\w+\s?)*$'}
        email: {type: string, pattern: '^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$'}
        repeat: {type: string, pattern: '^(.*a){12}$'}
        list: {type: array, items: {type: string, pattern: '^(x+x+)+y$'}}
        tags:
          type: object
          patternProperties: {'^(a+)+$': {type: string}}
          propertyNames: {pattern: '^(a|aa)+$'}
          additionalProperties: false
        rx: {type: string, format: regex}
      required: [word]
      additionalProperties: false
    behaviour:
      kind: compute
      result: {echo: "{{ word }}"}
tasks:
  - id: echo
    prompt: Echo the word aaa.
    answer: {value: aaa}
    workflow: sequential
    golden_path:
      steps:
        - {id: p, tool: probe, arguments: {word: aaa}}
      answer: "{{ p.echo }}"
"""


def near_misses(length: int) -> dict[str, list[object]]:
    """Worst arguments per class, each one call: strings that almost match (the backtracking worst case), arrays of
    them, keys of them, a regex to compile, and calls over the documented size limits."""
    a_bang = "a" * length + "!"
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    return {
        "nested_quantifier": [{"word": a_bang}, {"word": "a" * 33 + "!"}, {"word": "a" * 16_000 + "!"}],
        "alternation": [
            {"word": "a", "alt": a_bang},
            {"word": "a", "pairs": a_bang},
            {"word": "a", "pairs": "a" * 16_000 + "b"},
        ],
        "word_groups": [{"word": "a", "words": "word " * (length // 5) + "!"}],
        "email": [{"word": "a", "email": "a" * length + "@"}, {"word": "a", "email": "a." * (length // 2) + "@x.c"}],
        "polynomial": [{"word": "a", "repeat": a_bang}, {"word": "a", "repeat": "ab" * (length // 2)}],
        "array_items": [{"word": "a", "list": ["x" * 20 + "!"] * 2_000}, {"word": "a", "list": ["x" * 5_000] * 10}],
        "pattern_keys": [
            {"word": "a", "tags": {"a" * length + "!": "v"}},
            {"word": "a", "tags": {"a" * 30 + str(i) + "!": "v" for i in range(200)}},
        ],
        "format_regex": [{"word": "a", "rx": "(a+)+$"}, {"word": "a", "rx": "(?=a)(?<!b)\\1"}],
        "over_limits": [
            {"word": "a" * 20_000},
            {"word": "a", "list": ["x"] * 20_000},
            {"word": "a", "list": ["x" * 16_000] * 5},
            {"word": "a", "list": deep},
        ],
    }


def high_water_kib(pid: int) -> int:
    """The process's own peak RSS (VmHWM). Not `ru_maxrss`: on Linux it keeps the high-water mark of the memory
    the child was forked from, the whole pytest worker, so it would measure the worker, not the command."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass  # ended between two readings: its last reading stands
    return 0

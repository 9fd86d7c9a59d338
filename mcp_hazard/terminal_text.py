"""Text from strangers (traces, reports, scenario files, file names) shown on a terminal.

A control character printed as it is acts on the terminal instead of being read: an escape sequence in an agent's
name or answer can move the cursor, rewrite a line already printed, retitle the window or write the clipboard, and a
bidirectional override can make a line read as something else. A lone surrogate (a file name that is not
UTF-8) cannot be written at all. What `mcp-hazard` prints itself holds none of them but the newline and the tab, so
every other one is shown the way Python writes it in a string (`\\x1b`, `\\u202e`). Files are written as they are
(JSON escapes them; the JUnit report escapes what XML cannot hold).
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_CONTROL_OR_NEWLINE = re.compile(_CONTROL.pattern.replace("\x0b", "\n\x0b", 1))


def escaped(found: re.Match[str]) -> str:
    """A matched character as Python writes it in a string: `\\x1b`, `\\u202e`, `\\udcff`."""
    return found.group().encode("unicode_escape").decode("ascii")


MAX_LINE = 2000
"""The longest error or warning line shown whole: one that quotes a stranger's 200,000-character scenario id is
shown by its start and its end (where a warning says what came of it), with how much was left out between."""


def visible(text: str, *, one_line: bool = False) -> str:
    """`text` with each control character but newline and tab written as its escape; with `one_line` (an error or
    a warning, one line each however strange the value it quotes) the newline too, and at most MAX_LINE long."""
    pattern = _CONTROL_OR_NEWLINE if one_line else _CONTROL
    shown = pattern.sub(escaped, text) if pattern.search(text) else text
    if one_line and len(shown) > MAX_LINE:
        head, tail = MAX_LINE * 3 // 5, MAX_LINE // 5
        return f"{shown[:head]} … ({len(shown) - head - tail:,} characters left out) … {shown[-tail:]}"
    return shown

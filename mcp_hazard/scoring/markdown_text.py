"""Text from traces and reports (agent names, task ids, answers, paths) in Markdown: what the report, the diff and
the gate's CI summary write, shown as written, never as a tag, a link, emphasis or a table's column break."""

from __future__ import annotations

import re

# Backslash-escape Markdown punctuation (CommonMark allows it before any ASCII punctuation), but only where it can
# mean something, so the raw text stays readable: an underscore inside a word never emphasises in GFM
# (`transient_error`), and a `]` makes a link only when `(`, `[` or `:` follows, so `[48.7–57.9]` is left alone.
# `<`, `>` and `&` are always escaped: a name from a scenario file must never become an HTML tag or entity.
_SPECIAL = re.compile(r"[\\`*<>&|~#!]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|\[(?=[^\]]*\][(\[:])|\](?=[(\[:])")


def escape(text: str) -> str:
    return _SPECIAL.sub(lambda m: "\\" + m.group(0), " ".join(text.split()))


def code(text: str) -> str:
    """`text` as a code span, in a table cell too: a fence longer than any run of backticks in it, and `|` escaped
    (GFM splits a table row at a bare `|` even inside a code span)."""
    flat = re.sub(r"[\r\n]+", " ", text).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"

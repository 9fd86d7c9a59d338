"""The commands README.md and docs/*.md show, read out of the Markdown as a reader meets them.

A command is a line of a fenced block or an inline code span:
- in a `console` block, or one with no language, a line that starts with the prompt `$ ` (a block with no language
  also counts a line that starts with `mcp-hazard ` and is not a message, `mcp-hazard: ...`);
- in a `bash`, `sh` or `shell` block, every line that is not blank or a comment;
- inline, a code span that starts with `mcp-hazard ` (not a message), `python -m `, `.venv/bin/python -m `,
  `inspect eval `, `pip install ` or `curl `.
A line that ends with `\\`, or a following line that is indented (README's synopses), continues the command; a
`for` loop runs to its `done`. A trailing `  # comment` is not part of the command, and what a block with prompts
shows below a command (up to the next prompt) is its output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)
INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
INLINE_COMMAND = re.compile(r"^(mcp-hazard [a-z-]|python -m |\.venv/bin/python -m |inspect eval |pip install |curl )")
MESSAGE = re.compile(r"^mcp-hazard( [a-z-]+)*:")  # `mcp-hazard: error: ...`, `mcp-hazard generate dag: error:`
SHELL = {"bash", "sh", "shell"}
PROMPTED = {"console", ""}


@dataclass(frozen=True)
class Shown:
    """One command as a doc shows it, and the output shown below it (console blocks only)."""

    doc: str  # "README.md", "docs/agents.md"
    line: int  # where the command starts
    command: str  # continuation lines joined with a space, without the prompt and a trailing comment
    output: tuple[str, ...] = ()
    inline: bool = False
    block: int = 0  # the line of the fenced block's first line (0 inline)

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.command}"


def docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _strip_comment(line: str) -> str:
    """`cmd   # why` -> `cmd` (a `#` inside quotes or a word is kept)."""
    return re.split(r"\s+#\s", line, maxsplit=1)[0].rstrip() if not line.lstrip().startswith("#") else ""


def _joined(lines: list[str], start: int, shell: bool) -> tuple[str, int]:
    """The command that starts at lines[start] with its continuation lines, and the index after them."""
    parts = [_strip_comment(lines[start])]
    index = start + 1
    loop = parts[0].startswith(("for ", "while ")) and not re.search(r"\bdone$", parts[0])
    while index < len(lines):
        line = lines[index]
        if parts[-1].endswith("\\"):
            parts[-1] = parts[-1][:-1].rstrip()
        elif loop:
            loop = not re.match(r"\s*done\b", line)
        elif not (shell and line[:1] in (" ", "\t") and line.strip()):
            break
        parts.append(_strip_comment(line).strip())
        index += 1
    joiner = "\n" if parts[0].startswith(("for ", "while ")) else " "
    return joiner.join(part for part in parts if part), index


def _block(doc: str, first_line: int, language: str, body: str) -> list[Shown]:
    lines = body.splitlines()
    found: list[Shown] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if language in SHELL and line.strip() and not line.lstrip().startswith("#"):
            at = index
            command, index = _joined(lines, index, shell=True)
            found.append(Shown(doc, first_line + at, command, block=first_line))
            continue
        prompted = line.startswith("$ ")
        bare = language == "" and line.startswith("mcp-hazard ") and not MESSAGE.match(line)
        if language in PROMPTED and (prompted or bare):
            at = index
            command, index = _joined([line.removeprefix("$ "), *lines[index + 1 :]], 0, shell=False)
            index += at
            output = []
            while index < len(lines) and not lines[index].startswith("$ "):
                output.append(lines[index].rstrip())
                index += 1
            found.append(Shown(doc, first_line + at, command, tuple(output), block=first_line))
            continue
        index += 1
    return found


def shown_in(path: Path) -> list[Shown]:
    """Every command of one Markdown file, in order: fenced blocks first, then inline spans."""
    text = path.read_text(encoding="utf-8")
    doc = path.relative_to(ROOT).as_posix()
    found: list[Shown] = []
    for match in FENCE.finditer(text):
        body = "\n".join(line[len(match.group(1)) :] for line in match.group(3).splitlines())
        found += _block(doc, text.count("\n", 0, match.start()) + 2, match.group(2), body)
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for match in INLINE.finditer(prose):
        span = " ".join(match.group(1).split())
        if INLINE_COMMAND.match(span) and not MESSAGE.match(span):
            found.append(Shown(doc, prose.count("\n", 0, match.start()) + 1, span, inline=True))
    return found


def every_command() -> list[Shown]:
    return [shown for path in docs() for shown in shown_in(path)]

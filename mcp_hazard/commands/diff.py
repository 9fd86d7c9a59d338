"""`mcp-hazard diff RUN_A RUN_B`: the episodes that flipped between two runs, grouped by agent and condition, the
strongest evidence first; as text, Markdown or HTML (scoring/gate/diff.py). A report, not a gate: exit 0 whatever
changed (`gate --baseline` decides), 2 for a usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mcp_hazard.commands.options import command_parser
from mcp_hazard.commands.output_file import write_output
from mcp_hazard.errors import UserError
from mcp_hazard.terminal_text import visible

SUFFIXES = {".txt": "text", ".md": "markdown", ".html": "html", ".htm": "html"}


def _format(args: argparse.Namespace) -> str:
    if args.out is None:
        return str(args.format or "text")
    suffix = Path(args.out).suffix.lower()
    named = SUFFIXES.get(suffix)
    if named is None and args.format is None:
        raise UserError(f"--out {args.out}: unknown extension {suffix or '(none)'}; use .txt, .md or .html (or name "
                        "the format with --format)")  # fmt: skip
    if named is not None and args.format is not None and named != args.format:
        raise UserError(f"--out {args.out}: the extension {suffix} means {named}, but --format is {args.format}")
    return str(args.format or named)


def diff_command(args: argparse.Namespace) -> int:
    from mcp_hazard.scoring.gate import diff_runs, load_run, render_diff

    fmt = _format(args)
    found = diff_runs(load_run(args.run_a, "RUN_A"), load_run(args.run_b, "RUN_B"), args.agent)
    text = render_diff(found, fmt)
    if args.out is None:
        print(visible(text))
        return 0
    write_output(args.out, text, "the diff")
    print(f"mcp-hazard: wrote the {fmt} diff of {found.pairs} paired episodes to {args.out}", file=sys.stderr)
    return 0


HELP = "show which paired episodes flipped between two runs, and under which hazards"
EXAMPLES = [
    ("mcp-hazard diff runs/main runs/pr", "the episodes that flipped, strongest evidence first"),
    ("mcp-hazard diff runs/main runs/pr --out diff.html", "the same as an HTML page"),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "diff", HELP, EXAMPLES)
    parser.add_argument("run_a", metavar="RUN_A", help="the earlier run folder (the baseline)")
    parser.add_argument("run_b", metavar="RUN_B", help="the later run folder")
    parser.add_argument("--format", choices=["text", "markdown", "html"], help="default: from --out's extension, "
                        "else text")  # fmt: skip
    parser.add_argument("--out", metavar="FILE", help="write here (.txt, .md, .html) instead of standard output")
    parser.add_argument("--agent", action="append", default=None, metavar="NAME",
                        help="only this agent of RUN_B (repeatable; default: every agent)")  # fmt: skip
    parser.set_defaults(handler=diff_command)
    return parser

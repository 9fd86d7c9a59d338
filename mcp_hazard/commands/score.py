"""`score`: score traces and write the report (table, JSON, Markdown or HTML) and the per-episode table.

File formats come from the file's extension. An extension that names no format is refused before anything is scored
or written: a report silently written in another format than its name says is worse than none.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mcp_hazard.commands import ERROR_PREFIX, EXIT_USAGE
from mcp_hazard.commands.options import allow_python, command_parser
from mcp_hazard.commands.output_file import write_output
from mcp_hazard.terminal_text import visible

SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".html": "html", ".htm": "html", ".txt": "table"}
MORE = "--verbose prints every table; --out report.html writes the full report, with each episode's timeline"


class _Refused(Exception):
    """A one-line refusal (bad file names for the outputs, or nothing that could be scored): exit code 2."""


def _report_format(fmt: str | None, out: str | None) -> str:
    """--format if given, else the format --out's extension names (table without --out)."""
    if out is None:
        return fmt or "table"
    suffix = Path(out).suffix.lower()
    named = SUFFIX_FORMATS.get(suffix)
    if named is None and fmt is None:
        raise _Refused(
            f"--out {out}: unknown report extension {suffix or '(none)'}; use .txt, .md, .json or .html "
            "(or name the format with --format)"
        )
    if named is not None and fmt is not None and named != fmt:
        raise _Refused(f"--out {out}: the extension {suffix} means {named}, but --format is {fmt}")
    return fmt or str(named)


def _episode_format(path: str | None) -> str | None:
    from mcp_hazard.scoring.report.episodes import EPISODE_FORMATS

    if path is None:
        return None
    suffix = Path(path).suffix.lower()
    if suffix not in EPISODE_FORMATS:
        raise _Refused(f"--per-episode {path}: unknown extension {suffix or '(none)'}; use .csv or .jsonl")
    return EPISODE_FORMATS[suffix]


def suite_differences(paths: list[str], parts: dict[str, tuple[str, str, str]]) -> list[str]:
    """A warning when the runs named on the command line measured different suites (their content hashes differ,
    scenario/suite_id.py): comparing their success rates then mixes different tasks."""
    from mcp_hazard.scenario.suite_id import suite_hash

    if len(paths) < 2:
        return []
    hashes: dict[str, str] = {}
    for path in paths:
        root = Path(path).resolve()
        mine = [part for trace, part in parts.items() if Path(trace).resolve().is_relative_to(root)]
        if mine:
            hashes[path] = suite_hash(mine)
    if len(set(hashes.values())) < 2:
        return []
    listed = ", ".join(f"{path} {digest[:12]}" for path, digest in hashes.items())
    return [f"the runs measured different suites (content hash {listed}): their rates are not comparable task for "
            "task (docs/suite.md)"]  # fmt: skip


def score(args: argparse.Namespace) -> int:
    try:
        return _score(args)
    except _Refused as exc:
        print(f"{ERROR_PREFIX}{exc}", file=sys.stderr)
        return EXIT_USAGE


def _score(args: argparse.Namespace) -> int:
    from mcp_hazard.runner.matrix import agent_labels
    from mcp_hazard.scoring.aggregate import aggregate
    from mcp_hazard.scoring.collect import score_traces
    from mcp_hazard.scoring.report import render
    from mcp_hazard.scoring.report.episodes import render_episodes

    fmt = _report_format(args.format, args.out)
    episodes_fmt = _episode_format(args.per_episode)
    labels = agent_labels(getattr(args, "agent_label", None))
    if args.out and args.per_episode and Path(args.out).resolve() == Path(args.per_episode).resolve():
        raise _Refused(f"--out and --per-episode name the same file {args.out}")

    scored = score_traces(args.paths, scenarios=args.scenarios, allow_python=args.allow_python,
                          timelines=fmt == "html")  # fmt: skip
    if not scored.scores:
        for warning in scored.warnings:
            print(f"mcp-hazard: warning: {visible(warning, one_line=True)}", file=sys.stderr)
        where = ", ".join(args.paths)
        if scored.traces == 0:
            raise _Refused(
                f"nothing to score: no traces in {where} (a trace is a .jsonl file whose first line is an "
                "episode_started event)"
            )
        raise _Refused(f"nothing to score: none of the {scored.traces} traces in {where} could be scored (see above)")
    for each in scored.scores:
        each.agent_label = labels.get(each.agent, each.agent_label)
    scored.warnings.extend(suite_differences(args.paths, scored.suite_parts))
    report = aggregate(scored.scores, scored.warnings, scored.unscorable, scored.scenarios, scored.plan,
                       suite_parts=scored.suite_parts)  # fmt: skip
    brief = fmt == "table" and not args.out and not args.verbose  # a file always holds everything
    text = render(report, fmt, verbose=not brief, timelines=scored.timelines)
    if args.out:
        write_output(args.out, text, "report")
        print(f"mcp-hazard: wrote {fmt} report of {report['episodes']} episodes to {args.out}", file=sys.stderr)
    else:
        print(text + (f"\n{MORE}" if brief else ""))
    if args.per_episode and episodes_fmt:
        write_output(args.per_episode, render_episodes(report["per_episode"], episodes_fmt), "per-episode table")
        print(f"mcp-hazard: wrote {len(report['per_episode'])} episodes to {args.per_episode}", file=sys.stderr)
    for warning in scored.warnings:
        print(f"mcp-hazard: warning: {visible(warning, one_line=True)}", file=sys.stderr)
    return 0


HELP = "score traces: answers, recovery, robustness; write reports"
EXAMPLES = [
    ("mcp-hazard score runs/matrix", "the scorecard of a run folder"),
    ("mcp-hazard score runs/matrix --verbose", "every table in the terminal"),
    ("mcp-hazard score runs/matrix --out report.html", "the full report, with drill-down to each episode"),
    ("mcp-hazard score runs/ --per-episode verdicts.csv", "also one row per episode"),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "score", HELP, EXAMPLES)
    parser.add_argument("paths", nargs="+", help="run folders, trace files or directories of them")
    parser.add_argument("--format", choices=["table", "json", "markdown", "html"],
                        help="report format (default: from --out's extension, else table)")  # fmt: skip
    parser.add_argument("--out", help="write the report to this file (format from its extension)")
    parser.add_argument("--per-episode", metavar="FILE.csv|FILE.jsonl", help="also write one row per episode here")
    parser.add_argument(
        "--scenarios",
        action="append",
        default=[],
        metavar="DIR",
        help="where else to find the traces' scenario files, by SHA-256 or id (repeatable)",
    )
    allow_python(parser)
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print every table, not just the scorecard (files named by --out always hold everything)",
    )
    parser.add_argument("--agent-label", action="append", default=None, metavar="AGENT=GROUP",
                        help="put an agent in a group (overrides the group recorded by run; repeatable)")  # fmt: skip
    parser.set_defaults(handler=score)
    return parser

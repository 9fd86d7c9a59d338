"""The reference agents' table of docs/agentdojo.md, from a run's report.json: per suite (and `all`, pooled) and
condition, each agent's utility (AgentDojo's check passed) with its 95% Wilson interval, and under `injection` the
targeted attack success. docs/agentdojo.md shows it as printed, and a test prints it for a part of the run and finds
each of its rows in the doc, so the doc cannot drift from the code.

    python -m mcp_hazard.scoring.agentdojo_table RUN/report.json [--suite banking]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from mcp_hazard.json_parse import loads
from mcp_hazard.scoring.stats import wilson

ALL = "all"


def _cell(successes: int, n: int) -> str:
    if not n:
        return "–"
    low, high = wilson(successes, n)
    return f"{100 * successes / n:.1f}% [{100 * low:.1f}–{100 * high:.1f}] ({successes}/{n})"


def rows(report: dict[str, Any], suite: str | None = None) -> list[list[str]]:
    """[suite, condition or "attack success", one cell per agent] in the table's order: `all` first (only when no
    suite is named), then each suite; clean first, then the conditions by name."""
    episodes = [e for e in report.get("per_episode", []) if suite is None or e.get("scenario") == suite]
    agents = sorted({str(e["agent"]) for e in episodes})
    utility: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    attacked: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for episode in episodes:
        for scope in ([ALL] if suite is None else []) + [str(episode["scenario"])]:
            counts = utility[(scope, str(episode["condition"]), str(episode["agent"]))]
            counts[0] += bool(episode.get("correct"))
            counts[1] += 1
            if isinstance(episode.get("attacked"), bool):
                hits = attacked[(scope, str(episode["agent"]))]
                hits[0] += episode["attacked"]
                hits[1] += 1
    scopes = sorted({scope for scope, _, _ in utility}, key=lambda s: (s != ALL, s))
    out = []
    for scope in scopes:
        conditions = sorted({c for s, c, _ in utility if s == scope}, key=lambda c: (c != "clean", c))
        for condition in conditions:
            out.append([scope, condition, *(_cell(*utility[(scope, condition, a)]) for a in agents)])
        if any((scope, a) in attacked for a in agents):
            out.append([scope, "attack success", *(_cell(*attacked[(scope, a)]) for a in agents)])
    return [["suite", "condition", *agents], *out]


def markdown(table: list[list[str]]) -> str:
    header, *body = table
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    about = "The reference agents' table of docs/agentdojo.md, in Markdown."
    parser = argparse.ArgumentParser(prog="python -m mcp_hazard.scoring.agentdojo_table", description=about)
    parser.add_argument("report", type=Path, help="a run's report.json")
    parser.add_argument("--suite", help="only this suite's rows (banking, slack, travel, workspace)")
    args = parser.parse_args(argv)
    try:
        report = loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"mcp-hazard: error: {args.report}: {exc}", file=sys.stderr)
        return 2
    table = rows(report, args.suite)
    if len(table) == 1:
        print(f"mcp-hazard: error: {args.report}: no episode{' of ' + args.suite if args.suite else ''}",
              file=sys.stderr)  # fmt: skip
        return 2
    print(markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What several commands share, defined once: how a command's parser is made (its help, description and examples),
the flag groups more than one command takes, and the parsing of `--hazard` and `--profile` values.

A flag whose help text differs between commands (`--seeds`, `--task`) stays with its command: the text is part of
what the command promises, and one wording would fit neither.
"""

from __future__ import annotations

import argparse
from typing import Any

from mcp_hazard.commands.flag_values import positive, positive_float
from mcp_hazard.errors import UserError
from mcp_hazard.suggest import did_you_mean

PROFILES = ("strict", "guided", "guarded")
Examples = list[tuple[str, str]]
"""A command's examples: (command line, what it does); real lines that work as written from the project folder (a
test parses each one with the real parser)."""


def epilog(examples: Examples) -> str:
    """The examples block at the end of a command's --help."""
    lines = ["examples:"]
    for line, what in examples:
        lines.append(f"  {line}")
        lines.append(f"      {what}")
    return "\n".join(lines)


def command_parser(
    commands: Any, name: str, text: str, examples: Examples, description: str | None = None
) -> argparse.ArgumentParser:
    """A command's parser: its one-line help, the same as a description (unless it has a longer one), and its
    examples at the end."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=text, description=description or text[0].upper() + text[1:] + ".", epilog=epilog(examples)
    )
    return parser


def scenario_paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="scenario files or directories")


def allow_python(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")


def trace_options(parser: argparse.ArgumentParser) -> None:
    """Where the one stdio episode of `serve` and `proxy` is recorded, and under which names."""
    parser.add_argument("--trace-dir", default="runs", help="where trace files go (default: ./runs)")
    parser.add_argument("--episode-id", help="name of the episode and its trace file (stdio)")
    parser.add_argument("--agent", help="name of the agent under test, recorded in the trace (stdio)")
    # Not for people: `run` starts its stdio servers with it, and their traces then say that `run` ends them with
    # `agent_ended` (trace/events.py, RunInfo.runner).
    parser.add_argument("--runner", action="store_true", help=argparse.SUPPRESS)


def condition_options(parser: argparse.ArgumentParser) -> None:
    """The condition of one episode (`serve`, `proxy`): hazards, profile, interventions."""
    parser.add_argument(
        "--hazard", action="append", default=[], metavar="KIND[:key=value,...]",
        help="inject a hazard (repeatable); 'all' = every kind that applies, 'declared' = the scenario's own",
    )  # fmt: skip
    parser.add_argument("--profile", choices=["strict", "guided", "guarded"], default="strict",
                        help="strict: errors say what is wrong; guided: they also suggest a recovery; guarded: "
                        "strict, and answers are refused while evidence is incomplete or contradictory")  # fmt: skip
    parser.add_argument("--intervention", action="append", default=[], metavar="NAME",
                        help="interface intervention (repeatable, composed in order): rename, reorder, augment, "
                        "replace, names=random, names=realistic, names=contradicting, names=random-realistic, "
                        "substitute")  # fmt: skip


def http_access_options(parser: argparse.ArgumentParser) -> None:
    """Who may use an HTTP server and what a connection may hold (docs/http-api.md, docs/security.md)."""
    parser.add_argument("--token", help="HTTP: the control token that creating, listing and ending episodes needs "
                        "('Authorization: Bearer TOKEN' or ?token=); default: $MCP_HAZARD_TOKEN, else one is "
                        "generated and printed at start")  # fmt: skip
    parser.add_argument("--no-token", action="store_true", help="HTTP: no control token: anyone who reaches "
                        "the server may create, list and end episodes and reach each one (warns)")  # fmt: skip
    parser.add_argument("--read-timeout", type=positive_float, default=10.0, metavar="SECONDS",
                        help="HTTP: close a connection whose request has not arrived whole within SECONDS (default "
                        "10)")  # fmt: skip
    parser.add_argument(
        "--max-connections",
        type=positive,
        default=1000,
        metavar="N",
        help="HTTP: open connections at once; one more gets a 503 (default 1000)",
    )


def hazard_options(values: list[str] | None) -> list[Any]:
    """The hazards of `--hazard` values (None, the flag not given: every kind that applies, `all`); a bad one is one
    line, before any file is read."""
    from mcp_hazard.hazards import parse_hazard_option

    options: list[Any] = []
    for value in values if values is not None else ["all"]:
        parsed = parse_hazard_option(value)
        options.extend(parsed if isinstance(parsed, list) else [parsed])
    return options


def parse_profiles(text: str) -> list[str]:
    """`--profile strict,guided` of the commands that run a matrix (`run`, `plan`)."""
    profiles = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in profiles if p not in PROFILES]
    if bad or not profiles:
        hint = did_you_mean(bad[0], PROFILES) if bad else ""
        raise UserError(f"--profile: expected strict, guided, guarded or a comma-separated list of them, got {text!r}"
                        f"{hint}")  # fmt: skip
    return profiles


BUSY_CONCURRENCY = 16
CAREFUL_CONCURRENCY = 4


def default_concurrency(transport: str, agents: list[str], external: bool, proxied: bool) -> int:
    """Episodes at once when `--concurrency` is not given. Built-in agents over memory or HTTP cost a few
    milliseconds of CPU per episode and spend the rest waiting out latency and back-off, so 16 at once finish a
    matrix several times sooner with the same results; a server process per episode (stdio), an agent program, a
    model endpoint or a real server behind a proxy get 4, which none of them should find crowded."""
    careful = transport == "stdio" or external or proxied or "llm" in agents
    return CAREFUL_CONCURRENCY if careful else BUSY_CONCURRENCY

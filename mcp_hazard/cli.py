"""The `mcp-hazard` command. Every user error ends in one line on stderr, `mcp-hazard: error: ...`, and exit code 2
(1 is for findings, see commands/__init__.py), never a traceback."""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Any, NoReturn, cast

from mcp_hazard import __version__
from mcp_hazard.commands import ERROR_PREFIX, EXIT_INTERRUPTED, EXIT_USAGE
from mcp_hazard.errors import Interrupted, ScenarioError, UserError, first_leaf, path_error_line
from mcp_hazard.json_parse import LONE_SURROGATE
from mcp_hazard.suggest import did_you_mean
from mcp_hazard.terminal_text import visible

COMMANDS = (
    "validate", "serve", "proxy", "schema", "hazards", "score", "run", "gate", "diff", "verify", "plan", "perturb",
    "generate", "replay", "completion",
)  # fmt: skip
"""Every command, in the order --help lists them. Each is one module, mcp_hazard/commands/NAME.py: its parser
(`add_parser`, which also names the function that runs it), its behaviour and its examples."""
_WHOLE_PARSER = {"completion"}  # its script is written from every command's parser
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)  # keeps the examples' lines
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if found:
            hint = did_you_mean(found.group(1), re.findall(r"'([^']*)'", found.group(2)))
            message = (
                message[: found.start()]
                + f"invalid choice: {found.group(1)!r}{hint}; choose from "
                + (found.group(2).replace("'", ""))
            )
        self.exit(EXIT_USAGE, f"{ERROR_PREFIX}{message} (see {self.prog} --help)\n")


def command_module(name: str) -> Any:
    """The module of command `name`, imported when its parser is built: `serve` over stdio should not pay for the
    others' imports."""
    return import_module(f"mcp_hazard.commands.{name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only`, that command's alone (what `main` needs to run it): building every command's
    parser costs about 15 ms, and `generate`'s imports more, on every start of `serve`."""
    parser = _Parser(prog="mcp-hazard", description="An MCP server that plays an unreliable tool environment.",
                     epilog="examples:\n  mcp-hazard run scenarios/\n  mcp-hazard COMMAND --help\n\n"
                     "exit codes: 0 success, 1 a finding (a failed gate, replay difference, unsolvable instance, "
                     "failed model endpoints),\n            2 a usage or input error, 130 interrupted")  # fmt: skip
    parser.add_argument("--version", action="version", version=f"mcp-hazard {__version__}")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="stderr log level")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS if only is None else (only,):
        command = command_module(name).add_parser(commands)
        if name in _WHOLE_PARSER:
            command.set_defaults(parser=parser)
    return parser


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of `parser` and of the subcommand parsers below it."""
    found: list[str] = []
    for action in parser._actions:
        found += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _options(sub)
    return found


def _subparser(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return cast(argparse.ArgumentParser, action.choices[name])
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, with "did you mean" for an unknown flag among those of the command it was given to."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = _subparser(parser, getattr(args, "command", None))
        flag = next((word.split("=")[0] for word in extra if word.startswith("--")), None)
        hint = did_you_mean(flag, _options(command)) if flag else ""
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def _command_word(argv: Sequence[str]) -> str | None:
    """The command `argv` runs, when its first word after the global options is one; None for anything else
    (`--help`, `--version`, a mistyped command), which gets the whole parser."""
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--log-level":
            index += 2
        elif word.startswith("--log-level="):
            index += 1
        elif word.startswith("-"):
            return None
        else:
            return word if word in COMMANDS and word not in _WHOLE_PARSER else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    from mcp_hazard.logs import configure_logging

    words = sys.argv[1:] if argv is None else list(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):  # a file name not in UTF-8 is printed as `\udcff`, as stderr does
        sys.stdout.reconfigure(errors="backslashreplace")
    foreign = next((word for word in words if LONE_SURROGATE.search(word)), None)
    if foreign is not None:  # it would reach a lock file, a trace or a report, all UTF-8 text, only to fail there
        shown = foreign.encode("utf-8", "backslashreplace").decode("utf-8")
        print(f"{ERROR_PREFIX}{shown}: not UTF-8 text (a name in another encoding); mcp-hazard records the paths "
              "and values it is given as UTF-8: rename it", file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    args = _parse(build_parser(_command_word(words)), words)
    configure_logging(args.log_level)
    try:
        return cast(int, args.handler(args))
    except ScenarioError as exc:
        for problem in exc.problems:
            print(visible(str(problem), one_line=True), file=sys.stderr)
        return EXIT_USAGE
    except UserError as exc:
        print(f"{ERROR_PREFIX}{visible(str(exc), one_line=True)}", file=sys.stderr)
        return EXIT_USAGE
    except BaseExceptionGroup as group:  # a user error met by several concurrent tasks at once: said once
        mistakes, others = group.split(UserError)
        if mistakes is None or others is not None:
            raise
        print(f"{ERROR_PREFIX}{visible(str(first_leaf(mistakes)), one_line=True)}", file=sys.stderr)
        return EXIT_USAGE
    except Interrupted as exc:
        print(f"mcp-hazard: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `mcp-hazard hazards --json | head`: the reader left; that is not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # the system refused a path the user named where no check stood before it
        line = path_error_line(exc)
        if line is None:
            raise
        print(f"{ERROR_PREFIX}{visible(line, one_line=True)}", file=sys.stderr)
        return EXIT_USAGE

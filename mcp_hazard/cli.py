"""The `mcp-hazard` command. Every user error ends in one line on stderr, `mcp-hazard: error: ...`, and exit code 2
(1 is for findings, see commands/__init__.py), never a traceback."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any, NoReturn, cast

from mcp_hazard import __version__
from mcp_hazard.commands import ERROR_PREFIX, EXIT_INTERRUPTED, EXIT_USAGE
from mcp_hazard.commands.examples import epilog
from mcp_hazard.commands.flag_values import cpus, host_port, parse_seeds, port, positive, positive_float, seed, ttl
from mcp_hazard.errors import Interrupted, ScenarioError, UserError
from mcp_hazard.suggest import did_you_mean

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


def _condition_options(parser: argparse.ArgumentParser) -> None:
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


def _http_access_options(parser: argparse.ArgumentParser) -> None:
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


def _add(commands: Any, name: str, text: str) -> argparse.ArgumentParser:
    """A command's parser: its one-line help, the same as a description, and its examples at the end."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=text, description=text[0].upper() + text[1:] + ".", epilog=epilog(name)
    )
    return parser


class _Unbuilt:
    """Stands in for the parser of a command that is not running: what is added to it is dropped."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def set_defaults(self, **kwargs: Any) -> None:
        return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only`, that command's alone (what `main` needs to run it): building every command's
    parser costs about 15 ms, and `generate`'s imports more, on every start of `serve`."""

    def add(name: str, text: str) -> argparse.ArgumentParser:
        return _add(commands, name, text) if only in (None, name) else cast(argparse.ArgumentParser, _Unbuilt())

    parser = _Parser(prog="mcp-hazard", description="An MCP server that plays an unreliable tool environment.",
                     epilog="examples:\n  mcp-hazard run scenarios/\n  mcp-hazard COMMAND --help\n\n"
                     "exit codes: 0 success, 1 a finding (a failed gate, replay difference, unsolvable instance, "
                     "failed model endpoints),\n            2 a usage or input error, 130 interrupted")  # fmt: skip
    parser.add_argument("--version", action="version", version=f"mcp-hazard {__version__}")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="stderr log level")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    validate = add("validate", "check scenario files and prove each golden path works")
    validate.add_argument("paths", nargs="+", help="scenario files or directories")
    validate.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    validate.add_argument(
        "--hazard", action="append", default=[], metavar="KIND[:key=value,...]",
        help="also prove these hazards solvable (repeatable; 'all' = every kind that applies); declared ones always",
    )  # fmt: skip
    validate.add_argument(
        "--seeds", type=parse_seeds, default=list(range(5)), help="seeds to check, e.g. 0-19 or 1,5,9"
    )
    validate.add_argument("--profile", choices=["strict", "guided", "guarded"], default="strict")

    serve = add("serve", "serve episodes over stdio (one) or Streamable HTTP (many)")
    serve.add_argument("path", help="a scenario file, or a directory of them")
    serve.add_argument("--scenario", help="scenario id, when PATH holds several (stdio)")
    serve.add_argument("--task", help="task id (stdio; default: the scenario's first task)")
    serve.add_argument("--seed", type=seed, default=None, help="seed of the condition (stdio; default 0)")
    serve.add_argument("--trace-dir", default="runs", help="where trace files go (default: ./runs)")
    serve.add_argument("--episode-id", help="name of the episode and its trace file (stdio)")
    serve.add_argument("--agent", help="name of the agent under test, recorded in the trace (stdio)")
    # Not for people: `run` starts its stdio servers with it, and their traces then say that `run` ends them with
    # `agent_ended` (trace/events.py, RunInfo.runner).
    serve.add_argument("--runner", action="store_true", help=argparse.SUPPRESS)
    _condition_options(serve)
    serve.set_defaults(profile=None)  # strict, for the stdio episode; over HTTP each episode names its own
    serve.add_argument("--http", type=host_port, metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    serve.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    _http_access_options(serve)
    serve.add_argument("--episode-ttl", type=ttl, default=600.0, metavar="SECONDS",
                       help="HTTP: release an episode idle this long (ended ones after min(TTL, 60 s)); "
                       "traces stay on disk (default 600)")  # fmt: skip

    proxy = add("proxy", "put hazards in front of a real MCP server (stdio or HTTP)")
    proxy.add_argument(
        "path", nargs="?", help="a proxy file: what hazards need to know about the server's tools, tasks"
    )
    proxy.add_argument("--upstream-cmd", metavar="'CMD ...'", help="the real server's command line (it speaks stdio)")
    proxy.add_argument("--upstream-url", metavar="URL", help="the real server's Streamable HTTP endpoint")
    proxy.add_argument("--record", metavar="CASSETTE", help="also store the server's replies in this JSONL cassette")
    proxy.add_argument("--replay", metavar="CASSETTE", help="serve the replies in this cassette, without the server")
    proxy.add_argument("--allow-upstream-command", action="store_true", help="run the server command the proxy file "
                       "names (upstream.command); --upstream-cmd needs no flag")  # fmt: skip
    proxy.add_argument("--upstream-timeout", type=positive_float, metavar="SECONDS", help="seconds to wait for each "
                       "answer of the server (default: the file's upstream.timeout, else 60)")  # fmt: skip
    proxy.add_argument("--upstream-log", metavar="FILE", help="append the server's stderr to FILE instead of "
                       "passing it through to the proxy's stderr")  # fmt: skip
    proxy.add_argument("--task", help="task id from the proxy file (default: its first; none: an open episode)")
    proxy.add_argument("--seed", type=seed, default=None, help="seed of the condition (default: the file's, else 0)")
    proxy.add_argument("--trace-dir", default="runs", help="where trace files go (default: ./runs)")
    proxy.add_argument("--episode-id", help="name of the episode and its trace file (stdio)")
    proxy.add_argument("--agent", help="name of the agent under test, recorded in the trace (stdio)")
    proxy.add_argument("--runner", action="store_true", help=argparse.SUPPRESS)
    _condition_options(proxy)
    proxy.set_defaults(profile=None)
    proxy.add_argument("--http", type=host_port, metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    _http_access_options(proxy)
    proxy.add_argument("--episode-ttl", type=ttl, default=600.0, metavar="SECONDS",
                       help="HTTP: release an episode idle this long (default 600)")  # fmt: skip
    proxy.add_argument("--sdk", action="store_true", help="stdio in front of a stdio server: go through the SDK on "
                       "both sides instead of relaying frames (slower, the same trace)")  # fmt: skip

    schema = add("schema", "print the JSON Schema of the scenario (or proxy) file format")
    schema.add_argument("format", nargs="?", choices=["scenario", "proxy"], default="scenario")

    hazards = add("hazards", "list the hazard kinds, their parameters and recovery paths")
    hazards.add_argument("--json", action="store_true", help="print as JSON")

    score = add("score", "score traces: answers, recovery, robustness; write reports")
    score.add_argument("paths", nargs="+", help="run folders, trace files or directories of them")
    score.add_argument("--format", choices=["table", "json", "markdown", "html"],
                       help="report format (default: from --out's extension, else table)")  # fmt: skip
    score.add_argument("--out", help="write the report to this file (format from its extension)")
    score.add_argument("--per-episode", metavar="FILE.csv|FILE.jsonl", help="also write one row per episode here")
    score.add_argument("--scenarios", action="append", default=[], metavar="DIR",
                       help="where else to find the traces' scenario files, by SHA-256 or id (repeatable)")  # fmt: skip
    score.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    score.add_argument(
        "--verbose",
        action="store_true",
        help="print every table, not just the scorecard (files named by --out always hold everything)",
    )
    score.add_argument("--agent-label", action="append", default=None, metavar="AGENT=GROUP",
                       help="put an agent in a group (overrides the group recorded by run; repeatable)")  # fmt: skip

    run = add("run", "run agents over a matrix of conditions and print the scorecard")
    run.add_argument("paths", nargs="+", help="scenario files or directories")
    run.add_argument("--scenario", action="append", default=None, metavar="ID",
                     help="run only this scenario (repeatable; default: every scenario under PATHS)")  # fmt: skip
    run.add_argument("--task", action="append", default=None, metavar="ID",
                     help="run only this task, ID or SCENARIO/ID (repeatable; default: every task)")  # fmt: skip
    run.add_argument("--agent", action="append", default=None,
                     help="built-in agent: naive, naive-positional, recovering, golden, obedient, llm "
                          "(repeatable; default: naive and recovering, and naive-positional when an intervention "
                          "runs)")  # fmt: skip
    run.add_argument("--agent-label", action="append", default=None, metavar="AGENT=GROUP",
                     help="put an agent in a group for the report's group table, e.g. llm=contaminated "
                          "(repeatable)")  # fmt: skip
    run.add_argument("--repeats", type=positive, default=1, metavar="K",
                     help="attempts per cell with the same seed and condition (default 1); the report gives "
                          "best-of-k and pass^k over them")  # fmt: skip
    run.add_argument("--agent-cmd", action="append", default=[], metavar="'CMD ...'",
                     help="an external agent program (repeatable); see docs/agents.md")  # fmt: skip
    run.add_argument("--seeds", type=parse_seeds, default=[0], help="seeds, e.g. 1-5 or 1,3 (default 0)")
    run.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                     help="a hazard condition (repeatable; default all: each applicable kind alone)")  # fmt: skip
    run.add_argument("--profile", default="strict",
                     help="comma-separated profiles: strict, guided, guarded (default strict)")  # fmt: skip
    run.add_argument("--intervention", action="append", default=None, metavar="NAME",
                     help="an intervention condition (repeatable): a name, names joined with '+' to compose them "
                          "in order (replace+reorder), or 'all' = each alone; default none")  # fmt: skip
    run.add_argument("--transport", choices=["memory", "stdio", "http"], default="http",
                     help="how agents reach the server (default http: one real server on 127.0.0.1)")  # fmt: skip
    run.add_argument("--port", type=port, default=None, metavar="N",
                     help="--transport http: the port of the run's server on 127.0.0.1 (default: any free one); a "
                          "busy port stops the run before it starts")  # fmt: skip
    run.add_argument("--concurrency", type=positive, default=4, help="episodes at once (default 4)")
    run.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="where episodes run: local (this process, default) or ray (one Ray task per episode; "
                          "needs the [ray] extra, see docs/scale-out.md)")  # fmt: skip
    run.add_argument("--ray-address", metavar="ADDR",
                     help="the Ray cluster to join (default: RAY_ADDRESS, else a local Ray instance "
                          "for this run)")  # fmt: skip
    run.add_argument("--ray-num-cpus", type=cpus, default=None, metavar="N",
                     help="CPUs Ray reserves per episode, fractions allowed (default 1; LLM agents "
                          "mostly wait)")  # fmt: skip
    run.add_argument("--ray-env", action="append", default=[], metavar="NAME",
                     help="pass this environment variable to the Ray workers too (repeatable; "
                          "MCP_HAZARD_* always)")  # fmt: skip
    run.add_argument("--timeout", type=positive_float, default=60.0, help="seconds per episode (default 60)")
    run.add_argument("--call-timeout", type=positive_float, default=2.0,
                     help="seconds a reference agent waits for one tool call (default 2)")  # fmt: skip
    run.add_argument("--out", default="runs/matrix", help="run folder: traces, run log, reports (default runs/matrix)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--verbose", action="store_true", help="print every table, not just the scorecard")
    run.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")
    run.add_argument("--upstream-cmd", metavar="'CMD ...'", help="proxy: the real server's command line (PATHS: a "
                     "proxy file)")  # fmt: skip
    run.add_argument("--upstream-url", metavar="URL", help="proxy: the real server's Streamable HTTP endpoint")
    run.add_argument("--record", metavar="CASSETTE", help="proxy: also store the server's replies in this cassette")
    run.add_argument("--replay", metavar="CASSETTE", help="proxy: serve the replies in this cassette, no server")
    run.add_argument("--allow-upstream-command", action="store_true", help="proxy: run the server command the proxy "
                     "file names (upstream.command)")  # fmt: skip
    run.add_argument("--upstream-timeout", type=positive_float, metavar="SECONDS", help="proxy: seconds to wait for "
                     "each answer of the server (default: the file's upstream.timeout, else 60)")  # fmt: skip
    if only in (None, "run", "gate", "diff"):  # `run --min/--baseline`, `gate` and `diff`: commands/gate.py adds them
        from mcp_hazard.commands.gate import add_ci_parsers

        add_ci_parsers(commands, run, only)
    verify = add("verify", "prove every hazard instance solvable (recovering) and biting (naive)")
    verify.add_argument("paths", nargs="+", help="scenario files or directories")
    verify.add_argument("--seeds", type=parse_seeds, default=[0, 1], help="seeds (default 0-1)")
    verify.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                        help="hazards to check (repeatable; default all)")  # fmt: skip
    verify.add_argument("--intervention", action="append", default=[], metavar="NAME",
                        help="also prove every instance solvable under this intervention (repeatable; a+b composes; "
                             "'all' = each alone)")  # fmt: skip
    verify.add_argument("--transport", choices=["memory", "stdio", "http"], default="memory")
    verify.add_argument("--concurrency", type=positive, default=4)
    verify.add_argument("--out", help="keep the traces here (default: a temporary folder)")
    verify.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")

    if only in (None, "plan"):
        from mcp_hazard.commands.plan_parser import add_plan_parser

        add_plan_parser(commands)

    perturb = add("perturb", "write the tool listing as the agent sees it under interventions")
    perturb.add_argument("path", help="a scenario file")
    perturb.add_argument("--intervention", action="append", default=[], metavar="NAME", required=True)
    perturb.add_argument("--seed", type=seed, default=0)
    perturb.add_argument("--task", help="task id (default: the first)")
    perturb.add_argument("--out", help="write here instead of standard output")

    if only in (None, "generate"):
        from mcp_hazard.commands.generate import add_generate_parser

        add_generate_parser(commands)

    replay = add("replay", "re-run a trace's agent actions and check the new trace is the same")
    replay.add_argument("trace", help="a trace (.jsonl), or a replay script (.yaml: scenario, task, calls, answer)")
    replay.add_argument("--transport", choices=["memory", "stdio", "http"], default="memory")
    replay.add_argument("--scenarios", help="folder with the scenario file, if it moved")
    replay.add_argument("--allow-python", action="store_true", help="allow `python` behaviours (runs their code)")

    completion = add("completion", "print a shell completion script")
    completion.add_argument("shell", choices=["bash"], help="the shell (bash; zsh can load it with bashcompinit)")
    completion.set_defaults(parser=parser)  # the script is generated from this very parser (commands sit below cli)
    return parser


def _command(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """A command's function, imported when it runs: `serve` over stdio should not pay for the others' imports."""

    def run(args: argparse.Namespace) -> int:
        return cast(Callable[[argparse.Namespace], int], getattr(import_module(module), function))(args)

    return run


COMMANDS = {
    "validate": _command("mcp_hazard.commands.validate", "validate"),
    "serve": _command("mcp_hazard.commands.serve", "serve"),
    "proxy": _command("mcp_hazard.commands.proxy", "proxy"),
    "schema": _command("mcp_hazard.commands.validate", "schema"),
    "hazards": _command("mcp_hazard.commands.hazards", "hazards"),
    "score": _command("mcp_hazard.commands.score", "score"),
    "run": _command("mcp_hazard.commands.run", "run_command"),
    "verify": _command("mcp_hazard.commands.verify", "verify"),
    "replay": _command("mcp_hazard.commands.replay", "replay"),
    "perturb": _command("mcp_hazard.commands.perturb", "perturb"),
    "plan": _command("mcp_hazard.commands.plan", "plan_command"),
    "generate": _command("mcp_hazard.commands.generate", "generate_command"),
    "completion": _command("mcp_hazard.commands.completion", "completion"),
    "gate": _command("mcp_hazard.commands.gate", "gate_command"),
    "diff": _command("mcp_hazard.commands.diff", "diff_command"),
}


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
    args = _parse(build_parser(_command_word(words)), words)
    configure_logging(args.log_level)
    try:
        return COMMANDS[args.command](args)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_USAGE
    except UserError as exc:
        print(f"{ERROR_PREFIX}{exc}", file=sys.stderr)
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

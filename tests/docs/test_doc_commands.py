"""Every command README.md and docs/*.md show is proved to work, and a doc that gains one that nothing covers fails
here: tests/docs/coverage.py says the four ways a command is covered, and these tests check each of them (the
tables name commands that exist, registered tests exist and hold the command, every session test runs its share,
every synopsis names a real command and real flags)."""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from functools import cache
from pathlib import Path

from mcp_hazard.cli import build_parser

from . import coverage
from .coverage import (
    CANNOT_RUN,
    CANNOT_RUN_SECTIONS,
    NOT_COMMANDS,
    READ_FROM_BLOCK,
    READ_FROM_DOC,
    READ_FROM_README,
    REGISTERED,
    RUN_HERE,
    SAME_AS,
)
from .shown import ROOT, Shown, every_command


def test_the_docs_show_commands_where_a_reader_sees_them() -> None:
    """The reader's view, which the rest relies on: blocks, prompts, continuations, inline spans, outputs."""
    shown = every_command()
    assert len(shown) > 200
    found = {(s.doc, s.command): s for s in shown}
    main_job = found["docs/agents.md", "mcp-hazard run scenarios/ --agent naive --agent recovering"]
    assert main_job.output[:2] == ("...", main_job.output[1]) and "270 episodes" in main_job.output[1]
    assert ("README.md", "mcp-hazard --version") in found  # a bash block's line, its comment cut off
    assert any(s.command.startswith("mcp-hazard run scenarios/ [--agent naive") and "[--executor ray" in s.command
               for s in shown)  # an indented line continues README's synopsis  # fmt: skip
    assert ("docs/agents.md", "mcp-hazard score runs/smollm2 --per-episode smollm2.csv") in found  # inline
    assert not any(s.command.startswith("mcp-hazard: ") for s in shown)  # messages are not commands


def test_every_command_shown_is_covered() -> None:
    uncovered = [str(shown) for shown, how in coverage.table() if not how]
    assert not uncovered, "commands that no test runs (tests/docs/coverage.py says how to cover one):\n" + "\n".join(
        uncovered
    )


def _test_source(test: str) -> tuple[str, str]:
    """The module's text and the test function's text of `tests/path.py::name`; fails when either is missing."""
    path, name = test.split("::")
    module = (ROOT / path).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(module)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return module, ast.get_source_segment(module, node) or ""
    raise AssertionError(f"{test}: no such test")


def _literals(source: str) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Constant)
            and isinstance(node.value, str)}  # fmt: skip


def test_registered_tests_exist_and_hold_the_command() -> None:
    shown = {s.command for s in every_command()}
    for entry in REGISTERED:
        assert entry.command in shown, f"registered, but no doc shows it (any more): {entry.command}"
        _, function = _test_source(entry.test)
        missing = [w for w in shlex.split(entry.command) if w not in entry.instead and w not in _literals(function)]
        assert not missing, f"{entry.test} does not run `{entry.command}`: no literal {missing}"
    for doc, test in READ_FROM_DOC.items():
        module, _ = _test_source(test)
        assert Path(doc).name in module, f"{test} does not read {doc}"
    for heading, test in READ_FROM_README.items():
        module, _ = _test_source(test)
        assert "README" in module and heading in module, f"{test} does not read README's {heading}"
    for (doc, intro), test in READ_FROM_BLOCK.items():
        module, _ = _test_source(test)
        assert Path(doc).name in module and intro in module, f"{test} does not read {doc}'s block after {intro!r}"
        assert any(s.doc == doc and coverage.registered(s) == test for s in every_command()), (doc, intro)


def test_session_tests_exist_and_run_their_share() -> None:
    for doc, shares in RUN_HERE.items():
        for test, _ in shares:
            _, function = _test_source(test)
            name = test.split("::")[1]
            assert f'to_run({doc!r}, "{name}")'.replace("'", '"') in function or (
                f'to_run(DOC, "{name}")' in function or f'to_run(doc, "{name}")' in function
            ), f"{test} does not play to_run(..., {name!r})"
            assert coverage.to_run(doc, name), f"{test} has no command of {doc} to run"
    for (doc, command), other in SAME_AS.items():
        run_there = {s.command for test, _ in RUN_HERE[other] for s in coverage.to_run(other, test.split("::")[1])}
        assert command in run_there, f"{doc}: `{command}` is not run where {other} shows it"


def test_every_table_entry_is_used() -> None:
    """A stale entry would hide nothing today, but would cover a command someone adds later without anyone looking."""
    shown = every_command()
    for pattern, why in CANNOT_RUN.items():
        assert any(re.search(pattern, s.command) for s in shown), f"no command matches {pattern!r} ({why})"
    assert all(any(s.command == c for s in shown) for c in NOT_COMMANDS)
    for doc, heading in CANNOT_RUN_SECTIONS:
        assert any(s.doc == doc and coverage.heading_of(s, "#").startswith(heading) for s in shown), (doc, heading)
    assert all(any((s.doc, s.command) == key for s in shown) for key in SAME_AS)


@cache
def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found: dict[str, argparse.ArgumentParser] = {"": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                for inner in sub._actions:
                    if isinstance(inner, argparse._SubParsersAction):
                        found |= {f"{name} {n}": s for n, s in inner.choices.items()}
    return found


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _inspect_parameters() -> set[str]:
    """The parameters of the inspect task (`-T name=value`), read from mcp_hazard/inspect.py without importing it."""
    tree = ast.parse((ROOT / "mcp_hazard" / "inspect.py").read_text(encoding="utf-8"))
    (task,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "hazard"]
    return {argument.arg for argument in task.args.args}


def _synopsis_problems(shown: Shown) -> list[str]:
    words = coverage.QUOTED.sub("''", shown.command).replace("[", " ").replace("]", " ").split()
    if words[:2] == ["inspect", "eval"]:
        keys = [w.split("=")[0] for w, before in zip(words[1:], words, strict=False) if before == "-T"]
        return [f"-T {key}" for key in keys if key not in _inspect_parameters()]
    assert words[0] == "mcp-hazard", shown
    commands = _commands()
    name = " ".join(words[1:3]) if " ".join(words[1:3]) in commands else words[1] if len(words) > 1 else ""
    if name.startswith("-") or name == "...":
        name = ""
    if name not in commands:
        return [f"no command {words[1]!r}"]
    flags = _flags(commands[name]) | _flags(commands[""])
    return [w for w in words if w.startswith("--") and w.split("=")[0] not in flags]


def test_every_synopsis_names_a_real_command_and_its_flags() -> None:
    problems = [f"{shown}: {bad}" for shown, how in coverage.table() if how.startswith("synopsis")
                for bad in _synopsis_problems(shown)]  # fmt: skip
    assert not problems, "\n".join(problems)


# hazard options the docs show as refused, on purpose
REFUSED = {
    "conflict:factor=true",
    'latency:seconds="3"',
    "invocation_error:mode=new_required",
    "transient_error:times=-1",
}


def test_every_hazard_option_shown_is_taken_unless_shown_refused() -> None:
    """An option in the prose (`latency:seconds=3,slots=1`) is one a reader copies: it must parse, with parameters
    its kind takes (`latency:delay_s=3` did not: the parameter is `seconds`)."""
    from mcp_hazard.errors import UserError
    from mcp_hazard.hazards import REGISTRY
    from mcp_hazard.hazards.instances import parse_hazard_option

    option = re.compile(rf"(?<![\w.-])(?:{'|'.join(sorted(REGISTRY))}):(?:\"[^\"]*\"|,(?!\s)|[^\s`\"'),])+")
    found: dict[str, str] = {}
    for path in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        prose = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
        for span in re.findall(r"`([^`\n]+)`", prose):
            found |= {text: path.name for text in option.findall(span)}
    assert len(found) > 20 and set(found) >= REFUSED, sorted(found)
    wrong = []
    for text, doc in sorted(found.items()):
        try:
            (spec,) = parse_hazard_option(text)  # type: ignore[misc]
            REGISTRY[spec.kind].Params.model_validate(spec.params)
            taken = True
        except (UserError, ValueError):
            taken = False
        if taken == (text in REFUSED):
            wrong.append(f"{doc}: {text} is {'taken' if taken else 'refused'}")
    assert not wrong, wrong

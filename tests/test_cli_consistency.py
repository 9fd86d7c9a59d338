"""Every command behaves the same way, seen through the installed `mcp-hazard` console script: exit codes 0/1/2 (the
README's table), one `mcp-hazard: error:` line for every user error, "did you mean" for a mistyped name or flag,
examples in every `--help`, a busy HTTP port refused before anything claims to listen, and bash completion. What a
command says (the user errors, the scorecard) is read through `main()` in the test's process: the same words without
a Python start-up for each."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import WAIT_S, CliRun, run_main

from mcp_hazard.cli import COMMANDS, build_parser, command_module, main
from mcp_hazard.commands.flag_values import parse_seeds
from mcp_hazard.errors import UserError
from mcp_hazard.hazards import REGISTRY
from tests.e2e.support import ROOT, console_script, free_port_server

TIMEOUT = WAIT_S
SCORECARD_LINES = 26
"""The short scorecard `run` prints for one agent on travel.yaml under `--hazard all`, its rows per hazard kind
aside (48 lines with 11 kinds)."""
EXAMPLES = {name: command_module(name).EXAMPLES for name in COMMANDS}


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def one_error_line(done: subprocess.CompletedProcess[str] | CliRun) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mcp-hazard: error: "), lines[0]
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["run", "scenarios/travel.yaml", "--agent", "naiv"], "did you mean 'naive'?"),
        (["run", "scenarios/travel.yaml", "--task", "cheapest-trp"], "did you mean 'cheapest-trip'?"),
        (["serve", "scenarios/", "--scenario", "travl"], "did you mean 'travel'?"),
        (["run", "scenarios/travel.yaml", "--hazard", "transient_eror", "--transport", "memory"],
         "did you mean 'transient_error'?"),
        (["serve", "scenarios/travel.yaml", "--intervention", "renam"], "did you mean 'rename'?"),
        (["run", "scenarios/travel.yaml", "--sed", "3"], "did you mean '--seeds'?"),
        (["scroe", "runs/"], "did you mean 'score'?"),
        (["score", "scenarios/", "--out", "report.pdf"], "unknown report extension .pdf"),
        (["perturb", "scenarios/travel.yaml", "--intervention", "rename", "--out", "/nonexistent/listing.yaml"],
         "/nonexistent/listing.yaml: cannot write the listing: No such file or directory"),
        (["generate", "dag", "--core", "0"], "argument --core: must be between 1 and 100, got 0"),  # as --core 101
        # one past the largest seed (a ValidationError traceback from inside the run before)
        (["run", "scenarios/travel.yaml", "--seeds", str(2**63)], "seeds must be between 0 and 2**63-1"),
        (["verify", "scenarios/travel.yaml", "--seeds", f"{2**63 - 1}-{2**63}"], "seeds must be between 0 and 2**63-1"),
        # counts of many digits: an OverflowError traceback, or a matrix that filled the memory, before
        (["run", "scenarios/travel.yaml", "--repeats", "9" * 20], "argument --repeats: must be between 1 and 10000"),
        (["run", "scenarios/travel.yaml", "--seeds", ",".join(f"{n}-{n + 89_999}" for n in range(0, 900_000, 90_000))],
         "argument --seeds: at most 100000 seeds in all"),
        (["serve", "scenarios/travel.yaml", "--max-connections", "0"], "must be between 1 and 1000000, got 0"),
        # a file where the run folder goes: it said "File exists"
        (["run", "scenarios/travel.yaml", "--out", "README.md"], "cannot write the run folder README.md: a file, not a "
         "folder"),
        (["verify", "scenarios/travel.yaml", "--out", "README.md"], "cannot write the run folder README.md: a file, "
         "not a folder"),  # a NotADirectoryError traceback from inside the runner before
        # a name longer than the system takes: an OSError traceback from the first `stat` before
        (["score", "a" * 5000], f"{'a' * 60}...{'a' * 40} (5000 characters): File name too long"),
        (["validate", "a" * 5000], "(5000 characters): File name too long"),
        (["diff", "a" * 300, "b"], f"{'a' * 60}...{'a' * 40} (300 characters): File name too long"),
    ],
    ids=lambda value: (value if isinstance(value, str) else " ".join(value))[:100],
)  # fmt: skip
def test_a_user_error_is_one_line_exit_2_with_a_suggestion(args: list[str], suggestion: str) -> None:
    done = run_main(*args, cwd=ROOT)  # what the command says: the console script is tested below
    assert done.returncode == 2, done.stderr
    assert suggestion in one_error_line(done)
    assert done.stdout == ""


def test_a_finding_exits_1_and_success_exits_0(tmp_path: Path) -> None:
    script = tmp_path / "wrong.yaml"
    script.write_text(f"scenario: {ROOT / 'scenarios' / 'travel.yaml'}\ntask: fare-class\n"
                      f"trace_dir: {tmp_path / 'runs'}\ncalls: []\nanswer: Flex\n", encoding="utf-8")  # fmt: skip
    wrong = cli("replay", str(script))
    assert wrong.returncode == 1, wrong.stderr  # a finding: the script's answer is wrong
    assert "not correct" in wrong.stdout
    version = cli("--version")
    assert (version.returncode, version.stdout.strip()) == (0, "mcp-hazard 0.1.0")


def test_every_command_has_examples_that_parse() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    assert set(EXAMPLES) == set(commands)
    for name, examples in EXAMPLES.items():
        assert examples, name
        for line, what in examples:
            words = shlex.split(line.split(" > ")[0])
            if words[0] == "eval":
                words = shlex.split(words[1].strip("$()"))
            assert words[:2] == ["mcp-hazard", name] and what, line
            parser.parse_args(words[1:])  # exits (2) on a flag or value the parser does not take


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_is_one_module_holding_its_parser_behaviour_and_examples(name: str) -> None:
    """`mcp-hazard NAME` is parsed by commands/NAME.py's `add_parser`, run by a function of that module, and ends its
    --help with that module's examples."""
    module = command_module(name)
    args = build_parser(name).parse_args([name, *shlex.split(EXAMPLES[name][0][0].split(" > ")[0])[2:]])
    assert args.handler.__module__ == module.__name__ == f"mcp_hazard.commands.{name}"
    commands = next(a for a in build_parser(name)._actions if a.__class__.__name__ == "_SubParsersAction").choices
    assert list(commands) == [name] and commands[name].epilog.startswith("examples:\n  " + EXAMPLES[name][0][0])


def test_help_ends_with_the_examples() -> None:
    done = cli("run", "--help")
    assert done.returncode == 0
    tail = done.stdout.split("examples:\n", 1)[1]
    assert "  mcp-hazard run scenarios/\n" in tail
    assert all(line in done.stdout for line, _ in EXAMPLES["run"])


def test_a_busy_port_is_one_line_before_any_serving_line(tmp_path: Path) -> None:
    with free_port_server([console_script(), "serve", str(ROOT / "scenarios"), "--trace-dir", "runs"],
                          tmp_path) as port:  # fmt: skip
        done = cli("serve", str(ROOT / "scenarios"), "--http", f"127.0.0.1:{port}", cwd=tmp_path)
    assert done.returncode == 2
    line = one_error_line(done)  # nothing else, in particular no "serving ... on" line
    assert f"--http 127.0.0.1:{port}: the port is already in use" in line


def test_bash_completion_completes_commands_flags_and_values(tmp_path: Path) -> None:
    script = tmp_path / "mcp-hazard.bash"
    done = cli("completion", "bash")
    assert done.returncode == 0
    script.write_text(done.stdout, encoding="utf-8")
    probe = f"""
source {shlex.quote(str(script))}
complete_words() {{
    COMP_WORDS=("$@"); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _mcp_hazard; echo "${{COMPREPLY[*]}}"
}}
complete_words mcp-hazard sc
complete_words mcp-hazard run --trans
complete_words mcp-hazard run scenarios/ --hazard transient
complete_words mcp-hazard --log-level info score runs/ --form
complete_words mcp-hazard generate dag --na
"""
    ran = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=TIMEOUT)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["schema score", "--transport", "transient_error", "--format", "--names"]
    assert re.search(r"^complete .* mcp-hazard$", done.stdout, re.M)


def test_run_prints_a_short_scorecard_saying_once_which_kinds_were_left_out(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = run_main("run", "scenarios/travel.yaml", "--agent", "naive", "--hazard", "all", "--transport", "memory",
                    "--call-timeout", "0.2", "--no-progress", "--out", str(out), cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    short = SCORECARD_LINES + 2 * len(REGISTRY)  # a kind adds a row to recovery and one to success by condition
    assert len(lines) <= short and max(len(line) for line in lines[:-2]) <= 120, done.stdout  # the end names paths
    assert done.stdout.count("Hazard kinds left out of some tasks") == 1
    left_out = {line.split()[0]: line for line in lines if re.match(r"^(conflict|pagination|permanent_error) ", line)}
    assert set(left_out) == {"conflict", "pagination", "permanent_error"}, done.stdout
    assert "3 of 4   needs a second tool serving the values the task reads, to cross-check with" in left_out["conflict"]
    assert lines[-1].startswith(f"Full report: {out / 'report.html'} ")
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "## Hazard kinds left out of some tasks" in markdown and "travel/fare-class" in markdown


def test_a_seed_named_twice_runs_once(tmp_path: Path) -> None:
    """`--seeds 0-1,1-2` is seeds 0, 1 and 2: a run of it was refused as 'two cells of the matrix have the same
    episode id'."""
    assert parse_seeds("0-1,1-2") == [0, 1, 2] and parse_seeds("5,1-3,2") == [5, 1, 2, 3]
    done = run_main("run", "scenarios/travel.yaml", "--agent", "golden", "--task", "fare-class", "--hazard",
                    "transient_error", "--seeds", "0-1,1-2", "--transport", "memory", "--no-progress", "--out",
                    str(tmp_path / "run"), cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "run" / "traces").glob("*.jsonl"))) == 6  # 3 seeds x (clean, transient_error)


def test_a_user_error_met_by_concurrent_tasks_is_said_once(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A UserError raised inside a task group reaches the CLI wrapped in an ExceptionGroup (one per task that met
    it); it is one error line, as when raised alone. A group holding anything else stays an exception."""
    import mcp_hazard.commands.replay as replay

    def twice(args: object) -> int:
        raise ExceptionGroup("tasks", [UserError("hazard #1 (x): no tool"), ExceptionGroup("inner", [UserError("b")])])

    monkeypatch.setattr(replay, "replay", twice)
    assert main(["replay", "script.yaml"]) == 2
    assert capsys.readouterr().err == "mcp-hazard: error: hazard #1 (x): no tool\n"

    def mixed(args: object) -> int:
        raise ExceptionGroup("tasks", [UserError("a"), RuntimeError("a defect")])

    monkeypatch.setattr(replay, "replay", mixed)
    with pytest.raises(ExceptionGroup):
        main(["replay", "script.yaml"])


def test_a_path_the_system_refuses_is_one_line_and_other_os_errors_stay_errors(monkeypatch: pytest.MonkeyPatch,
                                                                                 capsys) -> None:  # fmt: skip
    """An OSError naming a path (one no check stood before) is the user's: one line, exit 2. One that names no
    path is a defect or the machine's, and stays an exception."""
    import mcp_hazard.commands.replay as replay

    def denied(args: object) -> int:
        raise PermissionError(13, "Permission denied", "/srv/private/run")

    monkeypatch.setattr(replay, "replay", denied)
    assert main(["replay", "script.yaml"]) == 2
    assert capsys.readouterr().err == "mcp-hazard: error: /srv/private/run: Permission denied\n"

    def no_path(args: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(replay, "replay", no_path)
    with pytest.raises(OSError, match="No space left"):
        main(["replay", "script.yaml"])

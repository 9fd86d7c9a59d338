"""`mcp-hazard generate dag` as a user runs it: through the parser, through `main()`, and the files it writes
served to a real MCP client and checked by `validate` and `verify`."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import WAIT_S, CliRun, run_main

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.commands.generate import add_parser, generate_command
from mcp_hazard.condition import Condition
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.answers import answer_matches
from mcp_hazard.scenario.golden_check import run_golden_path

from .support import file_graph

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--core", "5", "--depth", "3", "--connected", "5", "--disconnected", "5", "--seed", "1"]


def generate(*argv: str) -> int:
    """The CLI as it is wired: a parser with the command's `add_parser`, dispatched to `generate_command`."""
    parser = argparse.ArgumentParser(prog="mcp-hazard")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return generate_command(parser.parse_args(["generate", "dag", *argv]))


def cli(*args: str) -> CliRun:
    """The whole command line through `main()` in this process (the process boundary is not what these tests check)."""
    return run_main(*args, cwd=ROOT)


def test_writes_one_file_per_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(*ARGS, "--count", "3", "--out", str(tmp_path / "suite")) == 0
    files = sorted(p.name for p in (tmp_path / "suite").iterdir())
    assert files == ["dag-s1.yaml", "dag-s2.yaml", "dag-s3.yaml"]
    out = capsys.readouterr().out.splitlines()
    assert out == [f"wrote {tmp_path / 'suite' / f'dag-s{s}.yaml'} (dag-c5d3k5u5-rand-s{s})" for s in (1, 2, 3)]
    ids = {load_scenario(tmp_path / "suite" / name).id for name in files}
    assert len(ids) == 3


def test_same_arguments_give_byte_identical_files(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        argv = [*ARGS, "--names", "realistic", "--restate", "--count", "2"]
        assert generate(*argv, "--out", str(tmp_path / folder)) == 0
    for name in ("dag-s1.yaml", "dag-s2.yaml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "dag-s1.yaml").read_bytes() != (tmp_path / "a" / "dag-s2.yaml").read_bytes()


def test_generated_file_loads_and_golden_path_reaches_answer(tmp_path: Path) -> None:
    assert generate(*ARGS, "--out", str(tmp_path)) == 0
    scenario = load_scenario(tmp_path / "dag-s1.yaml").model
    task = scenario.tasks[0]
    assert answer_matches(task.answer, run_golden_path(scenario, task).answer)
    fg = file_graph(scenario)
    assert (len(fg.core), fg.longest_path(), len(fg.distractors)) == (5, 3, 10)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--core", "2", "--depth", "3"],
            "--depth 3 needs at least 4 core functions (a path of 3 edges), got --core 2",
        ),
        (["--core", "3", "--depth", "0"], "--core 3 needs --depth 1 or more"),
        (["--seed", str(2**63 - 1), "--count", "2"], "goes past the largest seed"),
    ],
)
def test_impossible_knobs_are_one_line_usage_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert generate(*argv, "--out", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcp-hazard: error: generate dag: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", [["--core", "x"], ["--connected", "-1"], ["--names", "clever"], ["--count", "0"], []])
def test_bad_flags_are_argparse_errors(argv: list[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        generate(*argv, *(["--out", str(tmp_path)] if argv else []))
    assert exited.value.code == 2


def test_unwritable_folder_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert generate("--out", str(blocker / "sub")) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcp-hazard: error: ") and "cannot write" in err and err.count("\n") == 1


def test_validate_proves_every_hazard_solvable_on_a_generated_suite(tmp_path: Path) -> None:
    for names in ("meaningful", "random", "contradicting"):
        assert generate(*ARGS, "--names", names, "--restate", "--count", "2", "--out", str(tmp_path / names)) == 0
    assert generate("--core", "1", "--depth", "0", "--connected", "0", "--disconnected", "0",
                    "--out", str(tmp_path / "tiny")) == 0  # fmt: skip
    for folder in sorted(tmp_path.iterdir()):
        done = cli("validate", str(folder), "--hazard", "all", "--seeds", "0-2")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.strip().splitlines()
        assert lines and all(" ok (" in line and "hazard instances solvable" in line for line in lines), done.stdout


def test_python_m_mcp_hazard_generate(tmp_path: Path) -> None:
    out = str(tmp_path / "a")
    command = [sys.executable, "-m", "mcp_hazard", "generate", "dag", *ARGS, "--count", "2", "--out", out]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("wrote ") == 2
    assert generate(*ARGS, "--count", "2", "--out", str(tmp_path / "b")) == 0
    for name in ("dag-s1.yaml", "dag-s2.yaml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    bad = cli("generate", "dag", "--core", "2", "--depth", "3", "--out", str(tmp_path / "c"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert cli("validate", str(tmp_path / "a")).returncode == 0


@pytest.mark.e2e
@pytest.mark.anyio
async def test_served_over_stdio_tools_fail_silently_and_the_golden_agent_solves(tmp_path: Path) -> None:
    assert generate(*ARGS, "--names", "random", "--restate", "--out", str(tmp_path)) == 0
    loaded = load_scenario(tmp_path / "dag-s1.yaml")
    task = loaded.model.tasks[0]
    first = task.golden_path.steps[0]
    out = file_graph(loaded.model).output[first.tool]
    right = run_golden_path(loaded.model, task).steps[0][2]
    with anyio.fail_after(WAIT_S):
        async with open_episode("stdio", loaded, task.id, Condition(seed=0), tmp_path / "traces") as connected:
            wrong = {k: v + 1 for k, v in first.arguments.items()}
            result = await connected.client.call_tool(first.tool, wrong)
            assert not result.is_error
            assert isinstance(result.structured_content, dict)
            assert result.structured_content[out] != right[out]  # a plausible number, no error: a silent failure
            # restatement: every value known so far, the given ones first, then what this episode obtained
            known = result.structured_content["known_values"]
            assert known == {**task.restate_known, out: result.structured_content[out]}
            report = await run_golden_agent(connected.client, task)
    assert report.notes == []
    assert answer_matches(task.answer, report.answer)


@pytest.mark.e2e
def test_verify_every_hazard_solvable_and_biting_on_a_generated_suite(tmp_path: Path) -> None:
    assert generate("--core", "4", "--depth", "3", "--connected", "2", "--disconnected", "2", "--seed", "3",
                    "--names", "random", "--restate", "--count", "2", "--out", str(tmp_path)) == 0  # fmt: skip
    done = cli("verify", str(tmp_path), "--seeds", "0")
    assert done.returncode == 0, done.stderr
    assert "all solvable, all biting" in done.stdout

"""A hazard kind from a package of its own: docs/examples/hazard-kind is installed apart from mcp-hazard (pip
install --target, offline from the local index, put on PYTHONPATH), and the commands of docs/hazards.md's block
after "With the package installed" run as written: listed, played through `mcp-hazard serve` subprocesses (run
--transport stdio), proved solvable and biting (verify), scored, and played in front of the real time server (its
proxy file runs `python -m mcp_server_time`: this interpreter, first on PATH)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, WAIT_S, hazard_command

DOC = REPO_ROOT / "docs" / "hazards.md"
INTRO = "With the package installed"
EXAMPLE = REPO_ROOT / "docs" / "examples" / "hazard-kind"


def _commands() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(INTRO) :].split("```")[1].strip().splitlines()
    assert block and all(line.startswith("$ mcp-hazard ") for line in block), block
    return [line[2:] for line in block]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target, source = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("source") / "hazard-kind"
    shutil.copytree(EXAMPLE, source)  # a build writes next to the sources: not in the repository
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(source)],
                   check=True, capture_output=True, timeout=WAIT_S)  # fmt: skip
    return target


def _run(command: str, cwd: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}  # fmt: skip
    return subprocess.run(hazard_command(*shlex.split(command)[1:]), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=WAIT_S)  # fmt: skip


def test_the_documented_commands_serve_run_verify_and_score_it(site: Path, tmp_path: Path) -> None:
    (tmp_path / "scenarios").symlink_to(REPO_ROOT / "scenarios")
    (tmp_path / "proxies").symlink_to(REPO_ROOT / "proxies")
    done = {}
    for command in _commands():
        done[command.split()[1]] = result = _run(command, tmp_path, site)
        assert result.returncode == 0, (command, result.stderr[-2000:])
    listed = {k["kind"]: k for k in json.loads(done["hazards"].stdout)}
    assert listed["cold_start"]["recovery"] == ["retry"] and "transient_error" in listed
    episodes = json.loads((tmp_path / "runs" / "cold" / "report.json").read_text())["per_episode"]
    hazarded = {e["agent"]: e for e in episodes if e["condition"] == "cold_start"}
    [recovered] = hazarded["recovering"]["hazards"]
    assert hazarded["recovering"]["correct"] and (recovered["kind"], recovered["recovered"]) == ("cold_start", True)
    assert recovered["path"] == "retry"
    [missed] = hazarded["naive"]["hazards"]
    assert not hazarded["naive"]["correct"] and not missed["recovered"]
    assert "all solvable, all biting" in done["verify"].stdout
    assert "cold_start" in done["score"].stdout
    proxied = json.loads((tmp_path / "runs" / "cold-proxy" / "report.json").read_text())["per_episode"]
    hazarded = [e for e in proxied if e["condition"] == "cold_start"]  # the real server's tools, the same kind
    assert hazarded and all("cold_start" in e["hazards_fired"] for e in hazarded)
    assert all(e["correct"] == (e["agent"] == "recovering") for e in hazarded), hazarded


def test_without_the_package_the_kind_is_unknown(tmp_path: Path) -> None:
    result = _run("mcp-hazard verify scenarios/travel.yaml --hazard cold_start --seeds 0", REPO_ROOT, tmp_path)
    assert result.returncode == 2 and "unknown kind" in result.stderr and "Traceback" not in result.stderr

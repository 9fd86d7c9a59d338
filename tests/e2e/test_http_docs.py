"""docs/http-api.md works as written: every curl example runs, in order, against a real server started through the
installed console script, and its answer has the shape (and, where the page shows them, the values) printed below it.

The page's setup lines (`export TOKEN=...`, `URL=$(curl ...)`) run before each later example, as they would in the
reader's shell; the server gets the token the page exports. Examples under the `--no-token` heading go to a second
server started with `--no-token`. A string the page shortens with "..." only has to start with the shown text; a
list shows some of its items, each of which must be in the answer; an object shows keys that must all be there,
with matching values. README's "Many episodes over HTTP" commands run the same way.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_S

from .support import ROOT, console_script, free_port_server

DOC = ROOT / "docs" / "http-api.md"
README = ROOT / "README.md"
BLOCK = re.compile(r"^## ([^\n]*)$|```(bash|json)\n(.*?)```", re.S | re.M)
EXPORTED = re.compile(r"^export TOKEN=(\S+)$", re.M)

pytestmark = pytest.mark.e2e


def examples(text: str) -> list[tuple[str, str, str, bool]]:
    """(setup lines, curl command, expected JSON text, whether it is for the --no-token server) for every curl
    block of a page, in order."""
    blocks = [(heading, kind, body) for heading, kind, body in BLOCK.findall(text)]
    found: list[tuple[str, str, str, bool]] = []
    setup: list[str] = []
    section = ""
    for (heading, kind, body), following in zip(blocks, [*blocks[1:], ("", "", "")], strict=True):
        section = heading or section
        command = body.replace("\\\n", " ").strip()
        if kind == "bash" and command.startswith("curl "):
            assert following[1] == "json", f"no JSON answer after: {body}"
            json.loads(following[2])  # the page's own JSON must be valid
            found.append(("\n".join(setup), command, following[2], "--no-token" in section))
        elif kind == "bash":  # setup for the examples after it; the server itself is started by the test
            setup += [line for line in command.splitlines() if not line.startswith("mcp-hazard ")]
    return found


def run_examples(found: list[tuple[str, str, str, bool]], ports: tuple[int, int], cwd: Path) -> None:
    """Each example with the setup before it, against the token server (the first port) or the open one."""
    for setup, curl, expected, open_plane in found:
        port = ports[1] if open_plane else ports[0]
        script = f"{setup}\n{curl}".replace(":8765", f":{port}")
        done = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=WAIT_S)
        assert done.returncode == 0, f"{curl}\n{done.stderr}"
        answer = json.loads(done.stdout)
        assert matches(json.loads(expected.replace(":8765", f":{port}")), answer) == [], (curl, answer)


def matches(expected: Any, actual: Any, where: str = "") -> list[str]:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {actual!r}"]
        problems = []
        for key, value in expected.items():
            if key not in actual:
                problems.append(f"{where}.{key}: missing in {sorted(actual)}")
            else:
                problems += matches(value, actual[key], f"{where}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {actual!r}"]
        problems = []
        for index, item in enumerate(expected):
            if all(matches(item, candidate) for candidate in actual):
                problems.append(f"{where}[{index}]: {item!r} matches no item of {actual!r}"[:600])
        return problems
    if isinstance(expected, str) and expected.endswith("...") and isinstance(actual, str):
        return [] if actual.startswith(expected[:-3]) else [f"{where}: {actual!r} does not start {expected[:-3]!r}"]
    return [] if expected == actual else [f"{where}: expected {expected!r}, got {actual!r}"]


def test_every_curl_example_of_the_http_doc_works_as_written(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    text = DOC.read_text(encoding="utf-8")
    found = examples(text)
    assert len(found) >= 16
    token = EXPORTED.search(text)
    assert token, "the page exports the token its examples use"
    scenarios = tmp_path / "scenarios"
    shutil.copytree(ROOT / "scenarios", scenarios)
    command = [console_script(), "serve", "scenarios/", "--trace-dir", "runs/"]
    with (
        free_port_server([*command, "--token", token.group(1)], tmp_path) as token_port,
        free_port_server([*command, "--no-token"], tmp_path) as open_port,
    ):
        run_examples(found, (token_port, open_port), tmp_path)


def test_the_readme_http_section_works_as_written(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Many episodes over HTTP") :]
    section = section[: section.index("\n## ", 3)]
    found = examples(section)
    assert found, "the section shows its commands"
    token = EXPORTED.search(section)
    assert token
    command = [console_script(), "serve", str(ROOT / "scenarios"), "--trace-dir", "runs/", "--token", token.group(1)]
    with free_port_server(command, tmp_path) as port:
        run_examples(found, (port, port), tmp_path)

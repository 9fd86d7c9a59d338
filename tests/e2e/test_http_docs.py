"""docs/http-api.md works as written: every curl example runs, in order, against a real server started through the
installed console script, and its answer has the shape (and, where the page shows them, the values) printed below it.

A string the page shortens with "..." only has to start with the shown text; a list shows some of its items, each of
which must be in the answer; an object shows keys that must all be there, with matching values.
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
BLOCK = re.compile(r"```(bash|json)\n(.*?)```", re.S)
TOKEN = "s3cret"

pytestmark = pytest.mark.e2e


def examples() -> list[tuple[str, str]]:
    """(curl command, expected JSON text) for every curl block of the page, in order."""
    blocks = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    found = []
    for (kind, text), following in zip(blocks, [*blocks[1:], ("", "")], strict=True):
        if kind == "bash" and text.lstrip().startswith("curl "):
            assert following[0] == "json", f"no JSON answer after: {text}"
            json.loads(following[1])  # the page's own JSON must be valid
            found.append((text.replace("\\\n", " ").strip(), following[1]))
    return found


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
    found = examples()
    assert len(found) >= 12
    scenarios = tmp_path / "scenarios"
    shutil.copytree(ROOT / "scenarios", scenarios)
    command = [console_script(), "serve", "scenarios/", "--trace-dir", "runs/"]
    with (
        free_port_server(command, tmp_path) as open_port,
        free_port_server([*command, "--token", TOKEN], tmp_path) as token_port,
    ):
        for curl, expected in found:
            port = token_port if f"Bearer {TOKEN}" in curl or "secret-1" in curl else open_port
            done = subprocess.run(["bash", "-c", curl.replace(":8765", f":{port}")], cwd=tmp_path,
                                  capture_output=True, text=True, timeout=WAIT_S)  # fmt: skip
            assert done.returncode == 0, f"{curl}\n{done.stderr}"
            answer = json.loads(done.stdout)
            assert matches(json.loads(expected.replace(":8765", f":{port}")), answer) == [], curl

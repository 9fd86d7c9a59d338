"""Item: no scenario pattern and no argument may stall other episodes (RE2, argument limits), proven on a real HTTP
server; patterns RE2 cannot compile are refused by `mcp-hazard validate` with a file:line:column error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO_ROOT, run_main, start_http_server
from mcp import Client
from mcp.shared.exceptions import MCPError

from .support import HOSTILE_SCENARIO, near_misses

DEADLINE = 300.0  # a guard against a hung test, not a timing assertion: with `re` the first call alone takes hours
PROBLEM_LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<path>\S+): (?P<msg>\S.*)$")


@pytest.mark.e2e
@pytest.mark.anyio
async def test_worst_arguments_on_worst_patterns_never_stall_another_episode(tmp_path: Path) -> None:
    """Episode A is fed every near-miss argument against nested-quantifier, alternation, polynomial, email,
    array-item, pattern-key and format-regex checks, plus calls over the size limits; episode B lists tools and
    calls a tool in a loop the whole time. B keeps answering, A gets error results, the server lives."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "hostile.yaml").write_text(HOSTILE_SCENARIO, encoding="utf-8")
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", folder)
    inputs = near_misses(10_000)
    results: dict[str, list[str]] = {kind: [] for kind in inputs}
    b_rounds = 0
    a_done = anyio.Event()
    try:
        with anyio.fail_after(DEADLINE):
            query = "scenario=hostile&task=echo&seed=0"
            url_a, url_b = server.lazy_url("a", query), server.lazy_url("b", query)
            async with Client(url_a, mode="legacy") as a, Client(url_b, mode="legacy") as b:

                async def feed_a() -> None:
                    for kind, calls in inputs.items():
                        for arguments in calls:
                            try:
                                result = await a.call_tool("probe", arguments)
                            except MCPError as exc:  # a frame the server refused is an answer too
                                results[kind].append(f"jsonrpc {exc.error.code}")
                                continue
                            results[kind].append("error" if result.is_error else "ok")
                    a_done.set()

                async def keep_b_busy() -> None:
                    nonlocal b_rounds
                    while not a_done.is_set() or b_rounds < 5:
                        listed = await b.list_tools()
                        assert "probe" in [tool.name for tool in listed.tools]
                        echoed = await b.call_tool("probe", {"word": "aaa"})
                        assert echoed.is_error is not True and echoed.structured_content == {"echo": "aaa"}
                        b_rounds += 1

                async with anyio.create_task_group() as group:
                    group.start_soon(feed_a)
                    group.start_soon(keep_b_busy)
                final = await a.call_tool("probe", {"word": "aaaa"})
        assert final.is_error is not True
    finally:
        server.stop()
    assert b_rounds >= 5
    tried = sum(len(calls) for calls in inputs.values())
    assert sum(len(found) for found in results.values()) == tried
    expected = {kind: ["error"] * len(calls) for kind, calls in inputs.items()}
    expected["format_regex"] = ["ok", "error"]  # compiling `(a+)+$` is harmless; only a lookaround is not RE2
    assert results == expected
    assert "Traceback" not in server.stderr()


CANNOT_COMPILE = [
    pytest.param("bad: {type: string, pattern: '^(?=a)a+$'}", "properties.bad.pattern", id="lookahead"),
    pytest.param("bad: {type: string, pattern: '(?<!b)a'}", "properties.bad.pattern", id="lookbehind"),
    pytest.param("bad: {type: string, pattern: '^(a)\\1$'}", "properties.bad.pattern", id="backreference"),
    pytest.param("bad: {type: string, pattern: 'a{2000}'}", "properties.bad.pattern", id="repetition-too-large"),
    pytest.param(
        "badtags: {type: object, patternProperties: {'^(?!x)': {type: string}}}",
        "properties.badtags.patternProperties",
        id="pattern-key-lookahead",
    ),
    pytest.param(
        "badlist: {type: array, items: {type: string, pattern: '(?P<n>a)(?P=n)'}}",
        "properties.badlist.items.pattern",
        id="named-backreference-in-items",
    ),
]


@pytest.mark.e2e
@pytest.mark.parametrize(("property_line", "where"), CANNOT_COMPILE)
def test_validate_refuses_patterns_re2_cannot_compile_with_file_line_column(
    tmp_path: Path, property_line: str, where: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """Through `main()` in this process; what RE2's C++ code would log goes to file descriptor 2, captured too."""
    text = HOSTILE_SCENARIO.replace("        rx: {type: string, format: regex}", f"        {property_line}")
    assert property_line in text
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    done = run_main("validate", str(path), cwd=REPO_ROOT)
    native = capfd.readouterr()
    output = done.stdout + done.stderr + native.out + native.err
    assert done.returncode != 0, output
    assert "Traceback" not in output and "re2.cc" not in output, output
    lines = [line for line in output.splitlines() if "RE2 cannot compile" in line]
    assert len(lines) == 1, output
    match = PROBLEM_LINE.match(lines[0])
    assert match is not None, lines[0]
    assert match["file"] == str(path) and int(match["line"]) > 0 and int(match["col"]) > 0
    assert where in match["path"], lines[0]
    line_text = text.splitlines()[int(match["line"]) - 1]
    assert any(piece in line_text for piece in ("pattern", "(?")), (line_text, lines[0])


def test_shipped_and_hostile_patterns_are_loadable() -> None:
    """The hostile file itself is valid: RE2 compiles every one of its patterns (what makes it matchable safely)."""
    from mcp_hazard.load import parse_scenario

    scenario: Any = parse_scenario(HOSTILE_SCENARIO, "hostile.yaml")
    assert scenario.tools[0].name == "probe"

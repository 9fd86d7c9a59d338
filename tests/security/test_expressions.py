"""Item: expressions have a bound on what they build. A `let` bomb (eight levels, each a list of ten copies of the
one before), operations that walk big shared values (join, sorted, `in`, equality of nested lists and mappings), a
chain of 3,000 `let`s and format widths of a billion are refused in one line by `mcp-hazard validate`, within a time
and memory guard; served, the bomb fails its call as a fault while another episode keeps answering tools/list, the
server's memory stays flat and the trace line stays small."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO_ROOT, hazard_command, start_http_server
from mcp import Client

from tests.proxy.support import made_once

from .support import high_water_kib

GUARD_S = 60.0  # a guard against a hung process on a busy 2-core machine, not a timing assertion
RSS_CEILING_KB = 600 * 1024  # the unbounded bomb took the server to 2.8 GB; a bounded one stays near its start
PROBLEM_LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<path>\S+): (?P<msg>\S.*)$")

HEAD = """\
format: 1
id: bombs
title: Expressions that build too much
tools:
  - name: boom
    description: Build a value from one word.
    input_schema:
      type: object
      properties:
        word: {type: string}
        width: {type: integer}
      required: [word]
    behaviour:
      kind: compute
      let:
"""
TAIL = """\
      result: {{n: "{{{{ {result} }}}}"}}
tasks:
  - id: t
    prompt: Call boom with the word x.
    answer: {{value: 1}}
    workflow: sequential
    golden_path:
      steps:
        - {{id: s, tool: boom, arguments: {{word: x, width: 5}}}}
      answer: "{{{{ s.n }}}}"
"""


def _ten(name: str) -> str:
    return "[" + ", ".join([name] * 10) + "]"


def _levels(prefix: str, count: int) -> dict[str, str]:
    """`p1` a list of ten words, `p2` a list of ten `p1`, ... (each level 10 times the one before)."""
    lets = {f"{prefix}1": _ten("word")}
    lets |= {f"{prefix}{i}": _ten(f"{prefix}{i - 1}") for i in range(2, count + 1)}
    return lets


def scenario(lets: dict[str, str], result: str) -> str:
    block = "".join(f"        {name}: {json.dumps(source)}\n" for name, source in lets.items())
    return HEAD + block + TAIL.format(result=result)


def _items(name: str, count: int) -> str:
    return "[" + ", ".join([name] * count) + "]"


def _fields(name: str, count: int) -> str:
    return "{" + ", ".join(f"'k{i}': {name}" for i in range(count)) + "}"


WIDE_FORMAT = "'" + "%(a)0999d" * 190 + "'"
OVER_WIDTH = "format width or precision"
PAST_BUDGET = "would take the call past 250,000 units"  # EXPRESSION_BUDGET
OVER_ONE_VALUE = "units, over the limit of 120,000 for one value"  # MAX_VALUE_UNITS

# (lets, result expression, what the one line must say): the shapes reported (seven levels, then the operation: each
# took validate past 20 s), then each operation on values within the limit for one value (a4 is 21,111 units),
# refused by its own charge
BOMBS = {
    "let-bomb-eight-levels": (
        _levels("a", 8),
        "len(a8)",
        f"let a5: expression budget exceeded: a list would be 211,111 {OVER_ONE_VALUE}",
    ),
    **{
        f"as-reported-{name}": (_levels("a", 7) | _levels("b", 7), source, "let a5: expression budget exceeded")
        for name, source in {
            "join": "len(join(',', a7))",
            "sorted": "len(sorted(a7))",
            "in": "len([b7 in [a7]])",
            "equality": "len([a7 == b7])",
            "mapping": "len([{'k': a7} == {'k': b7}])",
        }.items()
    },
    "join": (_levels("a", 3), f"join(',', {_items('a3', 30)})", f"a joined text would be 156,630 {OVER_ONE_VALUE}"),
    "sorted": (_levels("a", 3), f"len(sorted({_items('a3', 9)}))", f"sorting {PAST_BUDGET}"),
    "in": (_levels("a", 4) | {"c": _items("a4", 5)}, " or ".join(["word in c"] * 3), f"a comparison {PAST_BUDGET}"),
    "nested-list-equality": (
        _levels("a", 4) | _levels("b", 4) | {"c": _items("a4", 4), "d": _items("b4", 4)},
        "c == d",
        f"a comparison {PAST_BUDGET}",
    ),
    "mapping-equality": (
        _levels("a", 4) | _levels("b", 4) | {"m": _fields("a4", 4), "n": _fields("b4", 4)},
        "m == n",
        f"a comparison {PAST_BUDGET}",
    ),
    "text-of-a-shared-list": (
        _levels("a", 4),
        f"len(str({_items('a4', 4)}))",
        f"a value's text would be 208,889 {OVER_ONE_VALUE}",
    ),
    "format-width": ({"w": "word"}, "'%0999999999d' % 1", f"{OVER_WIDTH} 999999999 is over the limit of 1000"),
    "format-precision": ({"w": "word"}, "'%.999999999f' % 1", f"{OVER_WIDTH} 999999999 is over the limit of 1000"),
    "format-width-from-arguments": (
        {"f": "'%0' + str(width * 199999999) + 'd'"},
        "f % 1",
        f"{OVER_WIDTH} 999999995 is over the limit of 1000",
    ),
    "format-many-conversions": ({"f": WIDE_FORMAT, "g": "f + f"}, "g % {'a': 1}", "a formatted text would be"),
}


def run_measured(args: list[str], timeout: float = GUARD_S) -> tuple[int, str, float, int]:
    """Run a command; its exit code, stdout+stderr, seconds and peak RSS in KiB (the child's own high-water mark,
    read while it runs). Killed past `timeout`."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"measured-{os.getpid()}-{threading.get_ident()}.out"
    began = time.monotonic()
    with out.open("wb") as sink:
        process = subprocess.Popen(args, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink)
    try:
        peak_kib = 0
        while True:
            peak_kib = max(peak_kib, high_water_kib(process.pid))
            pid, status, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - began > timeout:
                process.kill()
                os.wait4(process.pid, 0)
                raise AssertionError(f"{args} ran for more than {timeout} s")
            time.sleep(0.02)
        process.returncode = os.waitstatus_to_exitcode(status)
        return (
            process.returncode,
            out.read_text(encoding="utf-8", errors="replace"),
            time.monotonic() - began,
            peak_kib,
        )
    finally:
        out.unlink(missing_ok=True)


def _validate(path: Path) -> tuple[str, float, int]:
    code, output, seconds, rss = run_measured(hazard_command("validate", str(path)))
    assert code == 2, output
    assert "Traceback" not in output, output
    lines = output.splitlines()
    assert len(lines) == 1, output
    return lines[0], seconds, rss


def _validate_every_bomb(folder: Path) -> None:
    """One `validate` process for every bomb file: what it printed, its time and its peak memory, in FOLDER."""
    paths = []
    for name, (lets, result, _words) in BOMBS.items():
        path = folder / f"{name}.yaml"
        path.write_text(scenario(lets, result), encoding="utf-8")
        paths.append(str(path))
    code, output, seconds, rss = run_measured(hazard_command("validate", *paths))
    saved = {"code": code, "output": output, "seconds": seconds, "rss": rss}
    (folder / "validated.json").write_text(json.dumps(saved), encoding="utf-8")


@pytest.fixture(scope="module")
def bombs_validated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Every bomb refused by one process (made once per test session): each refusal is proven on its own line, the
    time and memory guards hold for all of them together, and no Python start-up per bomb."""
    folder = made_once(tmp_path_factory, "bombs", _validate_every_bomb)
    return folder, json.loads((folder / "validated.json").read_text(encoding="utf-8"))


@pytest.mark.e2e
@pytest.mark.parametrize("name", list(BOMBS))
def test_validate_refuses_each_bomb_in_one_line_within_time_and_memory(
    bombs_validated: tuple[Path, dict[str, Any]], name: str
) -> None:
    folder, done = bombs_validated
    _lets, _result, words = BOMBS[name]
    path = folder / f"{name}.yaml"
    assert done["code"] == 2 and "Traceback" not in done["output"], done["output"]
    assert len(done["output"].splitlines()) == len(BOMBS), done["output"]  # one line per file, nothing else
    (line,) = [line for line in done["output"].splitlines() if line.startswith(f"{path}:")]
    seconds, rss = done["seconds"], done["rss"]
    match = PROBLEM_LINE.match(line)
    assert match is not None, line
    assert match["file"] == str(path) and match["path"] == "tasks[0].golden_path.steps[0]", line
    assert "golden path does not work: boom behaviour failed:" in match["msg"] and words in match["msg"], line
    assert len(line) < 600, line
    assert seconds < GUARD_S and rss < RSS_CEILING_KB, (seconds, rss)


@pytest.mark.e2e
def test_the_same_shapes_one_level_smaller_are_valid(tmp_path: Path) -> None:
    """The budget refuses the bombs, not the language: the same operations on smaller values validate clean."""
    lets = _levels("a", 4) | _levels("b", 4) | {"c": _items("a3", 3), "d": _items("b3", 3)}
    checks = ["len(join(',', c))", "(word in c)", "(c == d)", "len(str(c))", "len('%05d' % 1)"]
    text = scenario(lets, "len(sorted(c)) - 2 + 0 * (" + " + ".join(checks) + ")")
    path = tmp_path / "fits.yaml"
    path.write_text(text, encoding="utf-8")
    code, output, _, _ = run_measured(hazard_command("validate", str(path)))
    assert code == 0, output
    assert "golden paths reach answers" in output


@pytest.mark.e2e
def test_three_thousand_nested_lets_are_refused_at_load_with_the_let_named(tmp_path: Path) -> None:
    lets = {"a0": "[word]", **{f"a{i}": f"[a{i - 1}]" for i in range(1, 3000)}}
    text = scenario(lets, "len(a2999)")
    path = tmp_path / "nested.yaml"
    path.write_text(text, encoding="utf-8")
    line, seconds, rss = _validate(path)
    match = PROBLEM_LINE.match(line)
    assert match is not None, line
    assert match["path"] == "tools[0].behaviour.let.a64", line
    assert "more than 64 `let`s each built on the one before" in match["msg"], line
    assert text.splitlines()[int(match["line"]) - 1].strip().startswith("a64:"), line
    assert seconds < GUARD_S and rss < RSS_CEILING_KB


SERVED_LETS = {
    "a1": f"{_ten('word')} if word == 'boom' else [word]",
    **{f"a{i}": f"{_ten(f'a{i - 1}')} if word == 'boom' else a{i - 1}" for i in range(2, 9)},
    "pad": "('%0' + str(width) + 'd') % 7 if width else ''",
}


def _served_scenario() -> str:
    block = "".join(f"        {name}: {json.dumps(source)}\n" for name, source in SERVED_LETS.items())
    return HEAD + block + TAIL.format(result="len(a8) + len(pad) - 5")


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.e2e
@pytest.mark.anyio
async def test_a_served_bomb_fails_its_call_while_another_episode_keeps_answering(tmp_path: Path) -> None:
    """Episode A calls the eight-level bomb and a format width of a billion from its arguments, ten times each;
    episode B lists tools and makes a good call the whole time. A gets one-line isError results, B's tools/list stays
    prompt, the server's RSS stays under the ceiling (sampled from /proc), A's trace lines stay small, no traceback."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "bombs.yaml").write_text(_served_scenario(), encoding="utf-8")
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", folder)
    peak = [_rss_kb(server.process.pid)]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.02):
            peak.append(_rss_kb(server.process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    results: list[Any] = []
    listing_s: list[float] = []
    done = anyio.Event()
    try:
        with anyio.fail_after(GUARD_S * 2):
            query = "scenario=bombs&task=t&seed=0"
            a_url, b_url = server.lazy_url("a", query), server.lazy_url("b", query)
            async with Client(a_url, mode="legacy") as a, Client(b_url, mode="legacy") as b:
                start_rss = _rss_kb(server.process.pid)

                async def attack() -> None:
                    for _ in range(10):
                        results.append(await a.call_tool("boom", {"word": "boom"}))
                        results.append(await a.call_tool("boom", {"word": "x", "width": 999_999_999}))
                    done.set()

                async def keep_b_busy() -> None:
                    while not done.is_set() or len(listing_s) < 5:
                        began = time.monotonic()
                        listed = await b.list_tools()
                        listing_s.append(time.monotonic() - began)
                        assert "boom" in [tool.name for tool in listed.tools]
                        good = await b.call_tool("boom", {"word": "x", "width": 5})
                        assert good.is_error is not True and good.structured_content == {"n": 1}

                async with anyio.create_task_group() as group:
                    group.start_soon(attack)
                    group.start_soon(keep_b_busy)
                after = await a.call_tool("boom", {"word": "x", "width": 5})
        assert after.is_error is not True and after.structured_content == {"n": 1}
    finally:
        sampling.set()
        sampler.join(timeout=5)
        server.stop()
    assert len(results) == 20
    for result in results:
        assert result.is_error is True
        text = result.content[0].text
        assert text == "Internal error in tool 'boom'. The tool could not complete this call.", text
    assert max(listing_s) < 10.0, listing_s  # a guard: the unbounded bomb stalled it for 103 s
    assert max(peak) < RSS_CEILING_KB and max(peak) - start_rss < 200 * 1024, (start_rss, max(peak))
    trace = (tmp_path / "traces" / "a.jsonl").read_bytes().splitlines()
    assert max(map(len, trace)) < 4_096, max(map(len, trace))  # the unbounded bomb wrote a 722 MB line
    faults = [json.loads(line) for line in trace if b'"outcome":"fault"' in line]
    assert len(faults) == 20
    assert sum("let a5: expression budget exceeded" in event["error"] for event in faults) == 10
    assert sum("over the limit of 1000" in event["error"] for event in faults) == 10
    assert "Traceback" not in server.stderr()

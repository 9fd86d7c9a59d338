"""How long the worst scenario file that still passes takes to load, at the loader's limits.

A scenario file may come from a stranger, and `validate`, `serve` and `run` load every file they are given before they
do anything else. The loader's limits (mcp_hazard/scenario/yaml_source.py) bound the file's size, its values (alias
expansions counted) and each scalar's length; this script builds, for the limits in force, files shaped to cost the
most per byte and per value while still being valid scenarios, and times `mcp-hazard validate` on each in its own
process (wall time and peak RSS). docs/security.md ("Scenario files") records the figures.

    .venv/bin/python -m bench.scenario_load            # every shape, best of 2
    .venv/bin/python -m bench.scenario_load --repeat 3 --keep /tmp/worst

Shapes: `flat-list` (one constant result holding a list of numbers, checked against its output_schema),
`table-rows` (a table behaviour with as many rows as fit), `schema-enum` (an input_schema property with a huge enum),
`schema-refs` (an input_schema with as many properties as fit, each a `$ref` to a recursive definition),
`many-tools` (as many small tools as fit), `many-tasks` (as many tasks as fit, each with a golden path and a declared
hazard, so `validate` also proves each solvable under 5 seeds), `aliases` (a small file whose aliases expand to the
value limit) and `long-text` (descriptions at the scalar length limit, as many as fit).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp_hazard.scenario import yaml_source
from mcp_hazard.scenario.yaml_source import MAX_FILE_BYTES, MAX_NODES

MAX_SCALAR_CHARS = getattr(yaml_source, "MAX_SCALAR_CHARS", 64 * 1024)

HEAD = """format: 1
id: worst
title: Worst file within the limits
"""
TASK = """tasks:
  - id: t
    prompt: Call probe.
    answer: {value: ok}
    workflow: sequential
    golden_path:
      steps:
        - {id: p, tool: probe, arguments: {q: k0}}
      answer: "{{ p.status }}"
"""
PROBE = """  - name: probe
    description: A probe.
    input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
"""
MARGIN = 64  # values and bytes left for the frame of the file (head, task, tool)


def _fit(count: int, per_item_bytes: int, per_item_values: int) -> int:
    """How many items fit in both the byte limit and the value limit."""
    return max(1, min((MAX_FILE_BYTES - 2048) // per_item_bytes, (MAX_NODES - MARGIN) // per_item_values, count))


def flat_list() -> str:
    n = _fit(10**9, 3, 1)
    numbers = ",".join("1" for _ in range(n))
    return (HEAD + "tools:\n" + PROBE + "    output_schema: {type: object, properties: {status: {type: string}, "
            "items: {type: array, items: {type: integer}}}}\n"
            f"    behaviour: {{kind: constant, result: {{status: ok, items: [{numbers}]}}}}\n" + TASK)  # fmt: skip


def table_rows() -> str:
    row = "        - {when: {q: k%d}, result: {status: ok, n: %d}}\n"
    n = _fit(10**9, len(row % (99999, 99999)), 6)
    rows = "".join(row % (i, i) for i in range(n))
    table = "    behaviour:\n      kind: table\n      rows:\n" + rows + "      default: {result: {status: ok}}\n"
    return HEAD + "tools:\n" + PROBE + table + TASK


def schema_enum() -> str:
    n = _fit(10**9, 9, 1)
    values = ",".join(f"v{i}" for i in range(n))
    return (HEAD + "tools:\n  - name: probe\n    description: A probe.\n"
            f"    input_schema: {{type: object, properties: {{q: {{type: string}}, e: {{enum: [{values}]}}}}, "
            "required: [q]}\n    behaviour: {kind: constant, result: {status: ok}}\n" + TASK)  # fmt: skip


def schema_refs() -> str:
    """One input_schema with as many properties as fit, each a `$ref` to a recursive definition: the metaschema
    check and the load-time count of references both walk every one of them."""
    prop = "        p%d: {$ref: '#/$defs/n'}\n"
    n = _fit(10**9, len(prop % 99999), 2)
    props = "".join(prop % i for i in range(n))
    return (HEAD + "tools:\n" + PROBE.replace("    input_schema: {type: object, properties: {q: {type: string}}, "
            "required: [q]}\n", "    input_schema:\n      type: object\n      required: [q]\n      $defs:\n"
            "        n: {type: object, properties: {children: {type: array, items: {$ref: '#/$defs/n'}}}}\n"
            "      properties:\n        q: {type: string}\n" + props)
            + "    behaviour: {kind: constant, result: {status: ok}}\n" + TASK)  # fmt: skip


def many_tools() -> str:
    tool = ("  - name: t%d\n    description: d\n    input_schema: {type: object, properties: {q: {type: string}}}\n"
            "    behaviour: {kind: constant, result: {status: ok}}\n")  # fmt: skip
    n = _fit(10**9, len(tool % 99999), 12)
    tools = "".join(tool % i for i in range(n))
    return HEAD + "tools:\n" + PROBE + "    behaviour: {kind: constant, result: {status: ok}}\n" + tools + TASK


def many_tasks() -> str:
    task = ("  - id: t%d\n    prompt: Call probe.\n    answer: {value: ok}\n    workflow: sequential\n"
            "    golden_path: {steps: [{id: p, tool: probe, arguments: {q: k%d}}], answer: '{{ p.status }}'}\n"
            "    hazards: [{kind: transient_error, schedule: {times: 1}}]\n")  # fmt: skip
    n = _fit(10**9, len(task % (99999, 99999)), 20)
    tasks = "".join(task % (i, i) for i in range(n))
    tool = PROBE + "    annotations: {read_only_hint: true, idempotent_hint: true}\n"
    return HEAD + "tools:\n" + tool + "    behaviour: {kind: constant, result: {status: ok}}\n" + "tasks:\n" + tasks


def aliases() -> str:
    width = 1000
    copies = (MAX_NODES - MARGIN - width) // width
    block = "[" + ",".join("1" for _ in range(width)) + "]"
    refs = ",".join("*a" for _ in range(copies))
    return (HEAD + "tools:\n" + PROBE + "    output_schema: {type: object}\n"
            f"    behaviour: {{kind: constant, result: {{status: ok, a: &a {block}, many: [{refs}]}}}}\n"
            + TASK)  # fmt: skip


def long_text() -> str:
    text = "x" * MAX_SCALAR_CHARS
    n = max(1, (MAX_FILE_BYTES - 4096) // (MAX_SCALAR_CHARS + 64))
    tools = "".join(
        f"  - name: t{i}\n    description: {text}\n    input_schema: {{type: object}}\n"
        "    behaviour: {kind: constant, result: {status: ok}}\n"
        for i in range(n)
    )
    return HEAD + "tools:\n" + PROBE + "    behaviour: {kind: constant, result: {status: ok}}\n" + tools + TASK


SHAPES: dict[str, Callable[[], str]] = {
    "flat-list": flat_list,
    "table-rows": table_rows,
    "schema-enum": schema_enum,
    "schema-refs": schema_refs,
    "many-tools": many_tools,
    "many-tasks": many_tasks,
    "aliases": aliases,
    "long-text": long_text,
}


LOAD = "import sys; from mcp_hazard.load import load_scenario; load_scenario(sys.argv[1]); print('loaded')"
"""What `serve` and `run` do with a file before anything else (`validate` also plays hazards on every task)."""


def _child(command: list[str]) -> tuple[float, float, float, int, str]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of the child, its exit code and its last line of output. CPU
    time is the steadier figure on a shared machine."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        last = out.read().decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    cpu = usage.ru_utime + usage.ru_stime
    return elapsed, cpu, usage.ru_maxrss / 1024, child.returncode, last[0][:100]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per shape; the best counts (default 2)")
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    parser.add_argument("--only", action="append", choices=sorted(SHAPES), help="shapes to run (default all)")
    args = parser.parse_args(argv)
    folder = Path(args.keep or tempfile.mkdtemp(prefix="worst-scenarios-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"limits: {MAX_FILE_BYTES} bytes, {MAX_NODES} values, {MAX_SCALAR_CHARS} characters per scalar")
    print(f"{'shape':12} {'bytes':>9} {'step':8} {'wall s':>7} {'CPU s':>6} {'RSS MiB':>8}  exit  output")
    for name in args.only or SHAPES:
        path = folder / f"{name}.yaml"
        path.write_text(SHAPES[name](), encoding="utf-8")
        size = path.stat().st_size
        for step, command in (
            ("load", [sys.executable, "-c", LOAD, str(path)]),
            ("validate", [sys.executable, "-m", "mcp_hazard", "validate", str(path)]),
        ):
            runs = [_child(command) for _ in range(args.repeat)]
            best = min(runs, key=lambda run: run[1])  # the least CPU: the least disturbed by other work
            shown = best[4].replace(str(folder) + "/", "")
            figures = f"{best[0]:>7.2f} {best[1]:>6.2f} {best[2]:>8.1f}  {best[3]:>4}"
            print(f"{name:12} {size:>9} {step:8} {figures}  {shown}")
    if not args.keep:
        for path in folder.iterdir():
            os.unlink(path)
        folder.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

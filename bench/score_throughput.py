"""Scoring throughput: how fast `mcp-hazard score` gets through a large set of traces, next to the time it takes just
to parse the same files. bench/README.md explains it; docs/performance.md records the figures.

    python -m bench.score_throughput [--episodes 100000] [--dir DIR] [--keep] [--repeat 2] [--profile]

1. Seed traces. Every task of the shipped scenarios is run once through the real server (memory transport, the real
   MCP client) by four scripted agent behaviours (`golden`: follows the golden path and stops at the first error;
   `recovering`: retries, re-lists, renames arguments, paginates, falls back and cross-checks; `sloppy`: calls a tool
   that does not exist, sends bad and near-miss arguments, skips failed steps, perturbs its answer, calls after
   submitting; `quitter`: one call twice, then disconnects), clean, under each hazard kind (latency excepted: it
   sleeps) and under `declared`. A fifth, `explore`, calls every served tool once, to supply padding calls.
2. Generated set. A matrix seed x agent x profile x condition x task is filled with those seed traces, templated: each
   agent name draws a behaviour from its own mix, the seed / profile / agent / episode id / timestamps are rewritten,
   some correct answers are replaced by wrong ones (invented number, "I don't know", a value seen in a result), and
   short episodes are padded to 8-15 events with real extra calls (successful calls of tools no hazard targets, slots
   renumbered) or re-listings; about 12.5 events per episode. A `random.Random` owned by the bench drives every
   choice, so the set is the same on every run. Files go to DIR/<agent>/<episode_id>.jsonl with a manifest; a DIR
   that already holds the same set (same manifest, same file count) is reused.
3. Measurements, in this process, interleaved, each repeated (best reported): (a) parse: `trace_files(DIR)` and
   `read_trace` on every file; (b) score: `score_traces(DIR)` (listing, `read_trace`, scenarios from its
   `ScenarioCache`, `score_episode`), then `aggregate` over all scores. The ratio (b)/(a) is the figure of merit
   (target <= 2).

The default DIR is a fixed folder under the system temp dir, deleted at the end unless `--keep` (keep it to reuse it
on the next run). A DIR given with `--dir` is never deleted.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import hashlib
import io
import json
import os
import platform
import pstats
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
SCENARIO_DIR = REPO / "scenarios"
GENERATOR_VERSION = 2
BENCH_SEED = 20260314
MANIFEST = "bench-manifest.json"
SLOT_MARK = -987654321

CONDITIONS: dict[str, list[str]] = {
    "clean": [],
    "transient_error": ["transient_error"],
    "transient_error:error=rate_limited": ["transient_error:error=rate_limited"],
    "permanent_error": ["permanent_error"],
    "invocation_error": ["invocation_error"],
    "spec_drift": ["spec_drift"],
    "spec_drift:mode=rename_tool": ["spec_drift:mode=rename_tool"],
    "output_drift": ["output_drift"],
    "conflict": ["conflict"],
    "silent_wrong_value": ["silent_wrong_value"],
    "pagination": ["pagination"],
    "declared": ["declared"],
}
BEHAVIOURS = ("golden", "recovering", "sloppy", "quitter")
# agent name -> (behaviour mix, chance that a correct answer is replaced by a wrong one)
AGENTS: dict[str, tuple[dict[str, float], float]] = {
    "ref-golden": ({"golden": 1.0}, 0.0),
    "agent-careful": ({"recovering": 0.8, "golden": 0.15, "sloppy": 0.05}, 0.03),
    "agent-retry": ({"recovering": 0.5, "golden": 0.3, "sloppy": 0.2}, 0.05),
    "agent-fast": ({"golden": 0.6, "sloppy": 0.3, "quitter": 0.1}, 0.1),
    "agent-sloppy": ({"sloppy": 0.6, "golden": 0.2, "quitter": 0.2}, 0.2),
    "agent-mixed": ({"golden": 0.25, "recovering": 0.25, "sloppy": 0.25, "quitter": 0.25}, 0.1),
}
PROFILES = ("strict", "guided")
GAVE_UP = "I don't know"


# -- seed traces: real episodes through the real server ---------------------------------------------------------------


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _submit(client: Any, answer: str) -> None:
    from mcp_hazard.server.episode import SUBMIT_TOOL

    await client.call_tool(SUBMIT_TOOL, {"answer": answer})


async def _golden(client: Any, scenario: Any, task: Any) -> None:
    from mcp_hazard.agents.golden import run_golden_agent

    await run_golden_agent(client, task)


async def _recovering(client: Any, scenario: Any, task: Any) -> None:
    """Retries transient errors, re-lists after a changed interface (renamed tool or argument), fetches every page,
    falls back to a sibling tool, and cross-checks a result against a sibling once."""
    from mcp_hazard.agents.golden import result_value
    from mcp_hazard.hazards.base import fallback_arguments, fallbacks_for
    from mcp_hazard.scenario.expressions import ExpressionError, render
    from mcp_hazard.server.episode import TASK_PROMPT_NAME

    await client.list_tools()
    await client.get_prompt(TASK_PROMPT_NAME)
    checked: set[str] = set()

    async def pages(name: str, args: dict[str, Any], value: Any) -> Any:
        if not isinstance(value, dict) or not isinstance(value.get("total_pages"), int):
            return value
        merged = {k: v for k, v in value.items() if k not in ("page", "total_pages", "next_page")}
        for page in range(2, value["total_pages"] + 1):
            more = await client.call_tool(name, {**args, "page": page})
            if more.is_error:
                break
            extra = result_value(more)
            for key, item in extra.items() if isinstance(extra, dict) else []:
                if isinstance(item, list) and isinstance(merged.get(key), list):
                    merged[key] = merged[key] + item
        return merged

    async def call(tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        name, args = tool, dict(arguments)
        for _ in range(4):
            result = await client.call_tool(name, args)
            if not result.is_error:
                value = await pages(name, args, result_value(result))
                spec = scenario.tool(tool)
                if tool not in checked and spec is not None:
                    checked.add(tool)
                    for other in fallbacks_for(scenario, task, tool)[:1]:
                        mapped = fallback_arguments(scenario, spec, other, arguments)
                        if mapped is not None:
                            await client.call_tool(other, mapped)
                return True, value
            text = _text(result)
            if "Unknown tool" in text:
                listed = await client.list_tools()
                renamed = next((t.name for t in listed.tools if t.name.startswith(tool + "_")), None)
                if renamed is None:
                    break
                name = renamed
                continue
            unexpected = re.search(r"unexpected argument '([^']+)'", text)
            if unexpected:
                listed = await client.list_tools()
                schema: dict[str, Any] = next((t.input_schema for t in listed.tools if t.name == name), {}) or {}
                free = [p for p in (schema.get("properties") or {}) if p not in args and p != "page"]
                old = unexpected.group(1)
                if old not in args or not free:
                    break
                args[free[0]] = args.pop(old)
                continue
            if not re.search(r"\b(429|503|504|timed? ?out|reset|unavailable|retry)", text, re.IGNORECASE):
                break
        spec = scenario.tool(tool)
        for other in fallbacks_for(scenario, task, tool) if spec is not None else []:
            mapped = fallback_arguments(scenario, spec, other, arguments)
            if mapped is None:
                continue
            result = await client.call_tool(other, mapped)
            if not result.is_error:
                return True, result_value(result)
        return False, None

    results: dict[str, Any] = {}
    for step in task.golden_path.steps:
        try:
            arguments = render(step.arguments, results)
        except ExpressionError:
            return await _submit(client, GAVE_UP)
        ok, value = await call(step.tool, arguments)
        if not ok:
            return await _submit(client, "unable to determine")
        results[step.id] = value
    try:
        answer = render(task.golden_path.answer, results)
    except ExpressionError:
        return await _submit(client, GAVE_UP)
    await _submit(client, answer if isinstance(answer, str) else json.dumps(answer))


async def _sloppy(client: Any, scenario: Any, task: Any) -> None:
    """A hallucinated tool, a call without arguments, failed steps skipped, a perturbed answer, a call after the end."""
    from mcp_hazard.agents.golden import result_value
    from mcp_hazard.scenario.answers import parse_number
    from mcp_hazard.scenario.expressions import ExpressionError, render

    await client.list_tools()
    first = task.golden_path.steps[0].tool
    await client.call_tool(first.split("_")[0] + "_all", {"query": task.id.replace("-", " ")})
    await client.call_tool(first, {})
    results: dict[str, Any] = {}
    for number, step in enumerate(task.golden_path.steps):
        try:
            arguments = render(step.arguments, results)
        except ExpressionError:
            continue
        texts = [k for k, v in arguments.items() if isinstance(v, str) and v] if isinstance(arguments, dict) else []
        if texts and number < 2:  # a near miss first: a typo (unknown value), then the wrong case (known value)
            key = texts[0]
            miss = arguments[key][:-1] + ("x" if arguments[key][-1:] != "x" else "y")
            await client.call_tool(step.tool, {**arguments, key: miss if number == 0 else arguments[key].swapcase()})
        result = await client.call_tool(step.tool, arguments)
        if not result.is_error:
            results[step.id] = result_value(result)
    try:
        answer = render(task.golden_path.answer, results)
        text = answer if isinstance(answer, str) else json.dumps(answer)
    except ExpressionError:
        text = GAVE_UP
    value = parse_number(text)
    if value is not None and text != GAVE_UP:
        text = f"{value * 1.07 + 1:.2f}"
    await _submit(client, text)
    await client.call_tool(first, {})


async def _quitter(client: Any, scenario: Any, task: Any) -> None:
    """Reads the task, makes the first call twice, and disconnects without an answer."""
    from mcp_hazard.scenario.expressions import ExpressionError, render
    from mcp_hazard.server.episode import TASK_PROMPT_NAME

    await client.list_tools()
    await client.get_prompt(TASK_PROMPT_NAME)
    step = task.golden_path.steps[0]
    try:
        arguments = render(step.arguments, {})
    except ExpressionError:
        return
    await client.call_tool(step.tool, arguments)
    await client.call_tool(step.tool, arguments)


async def _explore(client: Any, scenario: Any, task: Any) -> None:
    """Calls every served tool once with the arguments of its first table row: the pool of padding calls."""
    await client.list_tools()
    for tool in scenario.task_tools(task):
        behaviour = tool.behaviour
        if getattr(behaviour, "kind", None) != "table":
            continue
        arguments = dict(behaviour.rows[0].when)
        if all(name in arguments for name in tool.input_schema.get("required", [])):
            await client.call_tool(tool.name, arguments)


AGENT_CODE: dict[str, Callable[[Any, Any, Any], Any]] = {
    "golden": _golden,
    "recovering": _recovering,
    "sloppy": _sloppy,
    "quitter": _quitter,
    "explore": _explore,
}


def run_seed_episodes(trace_dir: Path) -> list[tuple[str, str, Path]]:
    """Run every (scenario, task, condition, behaviour) once in memory; (condition, behaviour, trace) per episode."""
    from mcp_hazard.condition import Condition
    from mcp_hazard.errors import UserError
    from mcp_hazard.hazards import parse_hazard_option
    from mcp_hazard.load import load_scenarios
    from mcp_hazard.logs import configure_logging
    from mcp_hazard.runner.transports import open_episode

    configure_logging("warning")
    scenarios = load_scenarios([str(SCENARIO_DIR)])
    done: list[tuple[str, str, Path]] = []

    async def main() -> None:
        for loaded in scenarios:
            for task in loaded.model.tasks:
                for name, options in CONDITIONS.items():
                    hazards: list[Any] = []
                    for option in options:
                        parsed = parse_hazard_option(option)
                        hazards.extend(parsed if isinstance(parsed, list) else [parsed])
                    condition = Condition(seed=0, hazards=hazards)
                    for behaviour in (*BEHAVIOURS, "explore"):
                        try:
                            async with open_episode(
                                "memory", loaded, task.id, condition, trace_dir, agent=behaviour
                            ) as connected:
                                with anyio.fail_after(30):
                                    await AGENT_CODE[behaviour](connected.client, loaded.model, task)
                        except UserError:
                            continue  # this hazard cannot act on this task
                        done.append((name, behaviour, connected.trace_path))

    anyio.run(main)
    return done


# -- templates ---------------------------------------------------------------------------------------------------------


def _rest(event: dict[str, Any]) -> str:
    """An event's JSON without seq and ts, minus the opening brace: a line is '{"seq":N,"ts":"T",' + rest."""
    body = {k: v for k, v in event.items() if k not in ("seq", "ts")}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))[1:]


@dataclass
class Template:
    scenario: str
    task: str
    condition: str
    behaviour: str
    started: dict[str, Any]
    head: list[str]  # rests of the events before the insertion point (answer, else end)
    tail: list[str]  # rests from the insertion point on
    answer: Any = None  # the submitted answer, when correct and replaceable
    answer_index: int | None = None  # index in tail of the answer_submitted event
    wrong: list[str] = field(default_factory=list)
    pads: list[tuple[str, str, str]] = field(default_factory=list)  # (tool, rest before slot, rest after slot)
    relist: str | None = None  # rest of the episode's first tools_listed event
    next_slot: dict[str, int] = field(default_factory=dict)


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [str(value)]
    return []


def build_template(condition: str, behaviour: str, path: Path, scenarios: dict[str, Any]) -> Template:
    from mcp_hazard.scenario.answers import answer_matches, parse_number
    from mcp_hazard.trace.reader import read_trace

    events = read_trace(path).events
    started = {k: v for k, v in events[0].items() if k not in ("seq", "ts")}
    body = events[1:]
    cut = next((i for i, e in enumerate(body) if e["type"] == "answer_submitted"), None)
    if cut is None:
        cut = next((i for i, e in enumerate(body) if e["type"] == "episode_ended"), len(body))
    scenario = scenarios[started["scenario"]["id"]]
    task = scenario.task(started["task"])
    tpl = Template(
        scenario=scenario.id, task=task.id, condition=condition, behaviour=behaviour, started=started,
        head=[_rest(e) for e in body[:cut]], tail=[_rest(e) for e in body[cut:]],
    )  # fmt: skip
    tpl.relist = next((r for r in tpl.head if r.startswith('"type":"tools_listed"')), None)
    targeted = {t for h in started["hazards"] for t in h.get("targets", [])}
    seen: list[str] = []
    for event in body:
        if event["type"] != "tool_called":
            continue
        tpl.next_slot[event["tool"]] = max(tpl.next_slot.get(event["tool"], 1), event["slot"] + 1)
        if event["outcome"] == "ok":
            seen.extend(_scalars(event.get("result")))
            if event["tool"] not in targeted and event["tool"] in {t.name for t in scenario.tools}:
                pad = {k: v for k, v in event.items() if k not in ("seq", "ts")}
                pad["slot"] = SLOT_MARK
                before, after = _rest(pad).split(str(SLOT_MARK), 1)
                tpl.pads.append((event["tool"], before, after))
    if cut < len(body) and body[cut]["type"] == "answer_submitted":
        answer = body[cut]["answer"]
        if answer_matches(task.answer, answer):
            tpl.answer, tpl.answer_index = answer, 0
            number = parse_number(answer)
            if number is not None:
                tpl.wrong.append(f"{number * 1.1 + 3:.2f}")  # a number nobody returned: invented
            tpl.wrong.append(GAVE_UP)
            other = next((s for s in reversed(seen) if s != answer and not answer_matches(task.answer, s)), None)
            if other is not None:
                tpl.wrong.append(other)  # a value a tool did return: wrong_answer
    return tpl


def build_templates(work: Path) -> dict[tuple[str, str, str, str], Template]:
    from mcp_hazard.load import load_scenarios

    scenarios = {s.id: s.model for s in load_scenarios([str(SCENARIO_DIR)])}
    templates: dict[tuple[str, str, str, str], Template] = {}
    for condition, behaviour, path in run_seed_episodes(work):
        tpl = build_template(condition, behaviour, path, scenarios)
        templates[(tpl.scenario, tpl.task, condition, behaviour)] = tpl
    # Padding calls: a template's own successful calls of untargeted tools, plus the explorer's calls of untargeted
    # tools under the same condition (real calls through the server; the hazards did not touch them).
    for key, tpl in list(templates.items()):
        if key[3] == "explore":
            continue
        explorer = templates.get((*key[:3], "explore"))
        if explorer is not None:
            own = {tool for tool, _, _ in tpl.pads}
            tpl.pads.extend(pad for pad in explorer.pads if pad[0] not in own)
    return {key: tpl for key, tpl in templates.items() if key[3] != "explore"}


# -- the generated set -------------------------------------------------------------------------------------------------


def _manifest(episodes: int) -> dict[str, Any]:
    """What decides the set: a changed scenario file (or generator) means a new set."""
    digest = hashlib.sha256()
    for file in sorted(SCENARIO_DIR.glob("*.yaml")):
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return {"generator": GENERATOR_VERSION, "episodes": episodes, "seed": BENCH_SEED, "scenarios": digest.hexdigest()}


def existing_set(directory: Path, episodes: int) -> dict[str, Any] | None:
    """The manifest of a complete set of `episodes` traces already in `directory`, else None."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    expected = _manifest(episodes)
    if {k: manifest.get(k) for k in expected} != expected:
        return None
    count = sum(1 for _ in directory.rglob("*.jsonl"))
    return manifest if count == episodes else None


def generate(directory: Path, episodes: int, templates: dict[tuple[str, str, str, str], Template]) -> dict[str, Any]:
    rng = Random(BENCH_SEED)
    tasks = sorted({(s, t) for (s, t, _, _) in templates})
    # conditions each task has for every behaviour (a hazard that cannot act on a task is not run on it)
    per_task = {key: [c for c in CONDITIONS if all((*key, c, b) in templates for b in BEHAVIOURS)] for key in tasks}
    cells = [
        (agent, profile, condition, key)
        for agent in AGENTS
        for profile in PROFILES
        for condition in CONDITIONS
        for key in tasks
        if condition in per_task[key]
    ]
    if not cells:
        raise RuntimeError("no seed traces: the shipped scenarios produced no episode")
    for agent in AGENTS:
        (directory / agent).mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 3, 14, 8, 0, 0)
    total_events = 0
    written = 0
    seed = 0
    while written < episodes:
        for agent, profile, condition, key in cells:
            if written >= episodes:
                break
            mix, p_wrong = AGENTS[agent]
            behaviour = rng.choices(list(mix), weights=list(mix.values()))[0]
            tpl = templates[(*key, condition, behaviour)]
            episode_id = f"{key[0]}.{key[1]}.seed{seed}.{rng.getrandbits(32):08x}"
            started = dict(tpl.started)
            started["condition"] = {**started["condition"], "seed": seed, "profile": profile}
            started["run"] = {"episode_id": episode_id, "transport": "memory", "agent": agent}
            lines = [_rest(started)]
            lines.extend(tpl.head)
            length = rng.randint(8, 15)
            missing = length - 1 - len(tpl.head) - len(tpl.tail)
            slots = dict(tpl.next_slot)
            for _ in range(max(0, missing)):
                if tpl.pads and rng.random() < 0.95:
                    tool, before, after = rng.choice(tpl.pads)
                    slot = slots.get(tool, 1)
                    slots[tool] = slot + 1
                    lines.append(f"{before}{slot}{after}")
                elif tpl.relist is not None:
                    lines.append(tpl.relist)
            tail = list(tpl.tail)
            if tpl.answer_index is not None and tpl.wrong and rng.random() < p_wrong:
                wrong = rng.choice(tpl.wrong)
                tail[tpl.answer_index] = _rest({"type": "answer_submitted", "answer": wrong, "slot": 1})
            lines.extend(tail)
            base = start + dt.timedelta(seconds=written * 2.5)
            out = io.StringIO()
            for seq, rest in enumerate(lines):
                ts = (base + dt.timedelta(microseconds=seq * 1337)).isoformat(timespec="microseconds") + "Z"
                out.write(f'{{"seq":{seq},"ts":"{ts}",{rest}\n')
            (directory / agent / f"{episode_id}.jsonl").write_text(out.getvalue(), encoding="utf-8")
            total_events += len(lines)
            written += 1
        seed += 1
    manifest = {**_manifest(episodes), "events": total_events, "seeds": seed, "cells_per_seed": len(cells)}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


# -- measurements ------------------------------------------------------------------------------------------------------


def parse_only(directory: Path) -> dict[str, Any]:
    """(a) The files `mcp-hazard score DIR` would read, each parsed with `read_trace`, nothing else."""
    from mcp_hazard.scoring.collect import trace_files
    from mcp_hazard.trace.reader import read_trace

    files = trace_files([str(directory)])
    events = 0
    for file in files:
        events += len(read_trace(file).events)
    return {"episodes": len(files), "events": events}


def parse_and_score(directory: Path) -> dict[str, Any]:
    """(b) What `mcp-hazard score DIR` does before rendering: `score_traces` (list, read, score), then `aggregate`."""
    from mcp_hazard.scoring.aggregate import aggregate
    from mcp_hazard.scoring.collect import score_traces

    began = time.perf_counter()
    scored = score_traces([str(directory)])
    middle = time.perf_counter()
    report = aggregate(scored.scores, scored.warnings)
    return {
        "episodes": report["episodes"], "warnings": len(scored.warnings), "correct": report["overall"]["successes"],
        "score_traces_s": middle - began, "aggregate_s": time.perf_counter() - middle,
    }  # fmt: skip


def timed(fn: Callable[[Path], dict[str, Any]], directory: Path) -> tuple[float, dict[str, Any]]:
    gc.collect()
    began = time.perf_counter()
    out = fn(directory)
    return time.perf_counter() - began, out


def profile(directory: Path, top: int = 25) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(parse_and_score, directory)
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return text.getvalue()


# -- main --------------------------------------------------------------------------------------------------------------


def _rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f}" if seconds else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.score_throughput", description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=100_000, help="episodes to generate (default 100000)")
    parser.add_argument("--dir", help="where the generated traces go (reused when it already holds the same set)")
    parser.add_argument("--keep", action="store_true", help="keep the default temp dir for reuse by the next run")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best counts (default 2)")
    parser.add_argument("--profile", action="store_true", help="also cProfile one (b) pass, print hot spots")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.repeat < 1:
        parser.error("--episodes and --repeat must be positive")

    os.chdir(REPO)  # score as from the project root, like `mcp-hazard score` run there
    directory = Path(args.dir) if args.dir else Path(tempfile.gettempdir()) / f"mcp-hazard-bench-{args.episodes}"
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} ({platform.machine()}, "
          f"{platform.system()})")  # fmt: skip
    manifest = existing_set(directory, args.episodes)
    gen_s = 0.0
    if manifest is not None:
        print(f"reusing {manifest['episodes']:,} episodes ({manifest['events']:,} events) in {directory}")
    else:
        if (directory / MANIFEST).exists() or (args.dir is None and directory.exists()):
            shutil.rmtree(directory)  # a stale or partial set made by this bench
        elif directory.exists() and any(directory.iterdir()):
            parser.error(f"--dir {directory}: not empty and holds no set made by this bench; give a new folder")
        directory.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="mcp-hazard-seed-") as work:
            templates = build_templates(Path(work))
        seeded = time.perf_counter()
        print(f"seed traces: {len(templates)} real episodes in memory in {seeded - began:.1f} s")
        manifest = generate(directory, args.episodes, templates)
        gen_s = time.perf_counter() - began
        print(f"generated {manifest['episodes']:,} episodes ({manifest['events']:,} events, {manifest['seeds']} "
              f"seeds x {manifest['cells_per_seed']} cells) in {directory} in {gen_s:.1f} s")  # fmt: skip

    runs: dict[str, list[tuple[float, dict[str, Any]]]] = {"parse": [], "score": []}
    for _ in range(args.repeat):  # interleaved, so both see the same machine state
        runs["parse"].append(timed(parse_only, directory))
        runs["score"].append(timed(parse_and_score, directory))
    parse_s, parsed = min(runs["parse"], key=lambda r: r[0])
    score_s, scored = min(runs["score"], key=lambda r: r[0])
    events = parsed["events"]
    ratio = score_s / parse_s

    print()
    print(f"{'measurement':<44} {'episodes':>9} {'events':>10} {'best s':>8} {'events/s':>10}  runs (s)")
    for name, episodes, seconds, all_runs in (
        ("(a) parse: trace_files + read_trace", parsed["episodes"], parse_s, runs["parse"]),
        ("(b) score: score_traces + aggregate", scored["episodes"], score_s, runs["score"]),
    ):
        times = ", ".join(f"{r[0]:.2f}" for r in all_runs)
        print(f"{name:<44} {episodes:>9,} {events:>10,} {seconds:>8.2f} {_rate(events, seconds):>10}  {times}")
    print(f"{'    of which score_traces':<44} {'':>9} {'':>10} {scored['score_traces_s']:>8.2f}")
    print(f"{'    of which aggregate':<44} {'':>9} {'':>10} {scored['aggregate_s']:>8.2f}")
    print()
    verdict = "met" if ratio <= 2.0 else "NOT met"
    print(f"ratio (b)/(a) = {ratio:.2f}  (target <= 2.00: {verdict})")
    print(f"scored {scored['episodes']:,} episodes, {scored['correct']:,} correct, {scored['warnings']:,} warnings")

    if args.profile:
        print("\ncProfile of one (b) pass (score_traces + aggregate), top functions:")
        print(profile(directory))

    if args.dir is None and not args.keep:
        shutil.rmtree(directory, ignore_errors=True)
        print(f"removed {directory} (use --keep to reuse it next time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

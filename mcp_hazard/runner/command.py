"""`mcp-hazard run`: plan the matrix, run it, score it, print the scorecard and write the reports."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from mcp_hazard.agents import BUILT_IN, RUNNABLE
from mcp_hazard.errors import UserError
from mcp_hazard.runner.external import agent_name
from mcp_hazard.runner.matrix import plan
from mcp_hazard.runner.run import Runner
from mcp_hazard.scenario.load import load_scenarios

PROFILES = ("strict", "guided")


def _profiles(text: str) -> list[str]:
    profiles = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in profiles if p not in PROFILES]
    if bad or not profiles:
        raise UserError(f"--profile: expected strict, guided or strict,guided, got {text!r}")
    return profiles


def _hazards(values: list[str] | None) -> list[Any]:
    from mcp_hazard.hazards import parse_hazard_option

    options: list[Any] = []
    for value in values if values is not None else ["all"]:
        parsed = parse_hazard_option(value)
        options.extend(parsed if isinstance(parsed, list) else [parsed])
    return options


def run_command(args: argparse.Namespace) -> int:
    from mcp_hazard.scoring.aggregate import aggregate
    from mcp_hazard.scoring.collect import score_traces
    from mcp_hazard.scoring.report import render

    scenarios = load_scenarios(args.paths, allow_python=args.allow_python)
    agents = list(args.agent) if args.agent else ([] if args.agent_cmd else ["naive", "recovering"])
    for name in agents:
        if name not in BUILT_IN or name == "replay":
            raise UserError(f"--agent {name!r}: built-in agents are {RUNNABLE}")
    commands = {agent_name(command): command for command in args.agent_cmd}
    if args.transport == "memory" and commands:
        raise UserError("--agent-cmd needs --transport stdio or http: an external program cannot reach memory")
    if "llm" in agents:
        from mcp_hazard.agents.llm import LlmAgent

        LlmAgent()  # the endpoint settings fail here, before any episode runs
    from mcp_hazard.interventions.build import parse_composition

    interventions = [parse_composition(text) for text in args.intervention or []]
    hazards = _hazards(args.hazard if args.hazard is not None or not interventions else ["declared"])
    cells = plan(scenarios, [*agents, *commands], hazards, _profiles(args.profile), args.seeds, interventions)
    out = Path(args.out)
    runner = Runner(
        out, transport=args.transport, concurrency=args.concurrency, timeout_s=args.timeout,
        call_timeout_s=args.call_timeout, agent_cmds=commands, show_progress=not args.no_progress,
    )  # fmt: skip
    results = anyio.run(runner.run, cells)
    statuses = Counter(r.status for r in results)
    # A built-in agent that crashed (an LLM endpoint down, say) never had its turn: its episode is not scored, and
    # its trace is removed so a rerun tries it again. An external program's crash is its own and is scored.
    broken = {r.cell.episode_id for r in results if r.status == "crashed" and r.cell.agent not in commands}
    for episode_id in broken:
        (out / "traces" / f"{episode_id}.jsonl").unlink(missing_ok=True)
    scored = score_traces([str(out / "traces")], allow_python=args.allow_python)
    mine = {cell.episode_id for cell in cells} - broken
    scores = [s for s in scored.scores if s.episode_id in mine]
    report = aggregate(scores, scored.warnings)
    for fmt, name in (("json", "report.json"), ("markdown", "report.md"), ("html", "report.html")):
        (out / name).write_text(render(report, fmt), encoding="utf-8")
    print(render(report, "table"))
    print(
        f"{len(results)} episodes: {statuses['done']} run, {statuses['skipped']} already done, "
        f"{statuses['timeout']} timed out, {statuses['crashed']} crashed; "
        f"traces in {out / 'traces'}, reports in {out}/report.{{json,md,html}}"
    )
    for result in results:
        if result.status in ("timeout", "crashed"):
            print(f"mcp-hazard: {result.status}: {result.cell.episode_id}: {result.note}", file=sys.stderr)
    return 0

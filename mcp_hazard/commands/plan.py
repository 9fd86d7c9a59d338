"""`mcp-hazard plan`: how many seeds (or repeats) a run needs so that each of its paired comparisons detects a given
drop in success with power 0.8 at alpha 0.05 (scoring/power.py; docs/statistics.md states the formula).

The comparisons are the report's: each hazard condition against clean (per profile), each intervention against the
authored interface (per profile), and guided against strict when both profiles run. One seed gives each comparison
as many pairs as the matrix has cells under its condition for one agent; the pairs needed come from the discordance
rate: measured per comparison in a pilot run (`--pilot`), else derived from an assumed success rate (`--base-rate`,
outcomes taken as independent), else the worst case over every success rate, (1 + drop^2) / 2.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from mcp_hazard.commands.flag_values import MAX_SEEDS, drop, fraction, level, power
from mcp_hazard.commands.options import allow_python, command_parser, hazard_options, parse_profiles
from mcp_hazard.errors import UserError

PILOT_TABLES = {"hazard": "robustness", "intervention": "intervention_robustness", "profile": "hint_gain"}


def comparisons(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each comparison the run would report for one agent and one seed: {kind, name, profile, pairs_per_seed}."""
    from mcp_hazard.interventions.by_name import parse_composition
    from mcp_hazard.load import load_scenarios
    from mcp_hazard.runner.matrix import plan, select_tasks

    scenarios = load_scenarios(args.paths, allow_python=args.allow_python)
    scenarios, tasks = select_tasks(scenarios, args.scenario or [], args.task or [])
    profiles = parse_profiles(args.profile)
    interventions = [parse_composition(text) for text in args.intervention or []]
    cells = plan(scenarios, ["agent"], hazard_options(args.hazard), profiles, [0], interventions, tasks)
    counts: Counter[tuple[str, str, str]] = Counter()
    for cell in cells:
        if cell.label != "clean":
            counts[("hazard", cell.label, cell.profile)] += 1
        if cell.interventions:
            counts[("intervention", "+".join(cell.interventions), cell.profile)] += 1
        if cell.profile == "strict" and "guided" in profiles:
            counts[("profile", f"guided vs strict: {cell.label}", "strict,guided")] += 1
    return [{"kind": kind, "name": name, "profile": profile, "pairs_per_seed": n}
            for (kind, name, profile), n in sorted(counts.items())]  # fmt: skip


def pilot_discordance(path: str) -> dict[tuple[str, str, str], tuple[float, str]]:
    """(kind, name, profile) -> (discordance rate to plan with, where it came from), from a pilot run's report:
    per comparison the largest over its agents (the plan must serve each of them)."""
    from mcp_hazard.scoring.aggregate import aggregate
    from mcp_hazard.scoring.collect import score_traces
    from mcp_hazard.scoring.power import planning_discordance

    if not Path(path).exists():
        raise UserError(f"--pilot {path}: no such file or directory")
    scored = score_traces([path])
    if not scored.scores:
        raise UserError(f"--pilot {path}: no scorable trace there (run the pilot with `mcp-hazard run --out {path}`)")
    report = aggregate(scored.scores)
    found: dict[tuple[str, str, str], tuple[float, str]] = {}
    for kind, table in PILOT_TABLES.items():
        for row in report.get(table) or []:
            if kind == "hazard":
                key = (kind, row["condition"], row["profile"])
            elif kind == "intervention":
                key = (kind, row["intervention"], row["profile"])
            else:
                key = (kind, f"guided vs strict: {row['condition']}", "strict,guided")
            rate = planning_discordance(row["pairs"], row.get("discordant", 0))
            what = f"pilot: {row.get('discordant', 0)}/{row['pairs']} discordant ({row['agent']})"
            if key not in found or rate > found[key][0]:
                found[key] = (rate, what)
    return found


def plan_command(args: argparse.Namespace) -> int:
    from mcp_hazard.scoring.power import independent_discordance, pairs_needed

    if args.base_rate is not None and args.base_rate < args.drop:
        raise UserError(f"--base-rate {args.base_rate:g} is below --drop {args.drop:g}: no such drop is possible")
    rows = comparisons(args)
    if not rows:
        raise UserError("the matrix has no comparison: give --hazard, --intervention or --profile strict,guided")
    measured = pilot_discordance(args.pilot) if args.pilot else {}
    if args.base_rate is not None:
        assumed = (independent_discordance(args.base_rate, args.drop), f"base rate {args.base_rate:.0%}, independent")
    else:
        assumed = ((1 + args.drop**2) / 2, "worst case over base rates")
    for row in rows:
        rate, source = measured.get((row["kind"], row["name"], row["profile"]), assumed)
        if args.pilot and (row["kind"], row["name"], row["profile"]) not in measured:
            source = f"not in the pilot: {source}"
        needed = pairs_needed(args.drop, rate, args.alpha, args.power)
        row.update({"discordance": rate, "source": source, "pairs_needed": needed,
                    "attempts": math.ceil(needed / row["pairs_per_seed"])})  # fmt: skip
    attempts = max(row["attempts"] for row in rows)
    summary = {"drop": args.drop, "alpha": args.alpha, "power": args.power, "attempts_per_item": attempts,
               "seeds": f"0-{attempts - 1}" if attempts > 1 else "0", "comparisons": rows}  # fmt: skip
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"To detect a drop of {args.drop * 100:g} points (power {args.power:g}, two-sided alpha {args.alpha:g}, "
          "exact McNemar test), per agent:")  # fmt: skip
    header = ("comparison", "profile", "pairs/seed", "discordance", "pairs needed", "seeds", "discordance from")
    table = [header] + [
        (f"{r['kind']}: {r['name']}" if r["kind"] != "profile" else r["name"], r["profile"], str(r["pairs_per_seed"]),
         f"{r['discordance']:.3f}", str(r["pairs_needed"]), str(r["attempts"]), r["source"])
        for r in rows
    ]  # fmt: skip
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        print("  ".join(cell.rjust(w) if 2 <= i <= 5 else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(line, widths, strict=True))).rstrip())  # fmt: skip
    print(f"Every comparison: {attempts} attempt{'s' if attempts > 1 else ''} per item: --seeds {summary['seeds']},\n"
          "or fewer seeds times --repeats (repeats differ only for an agent that samples).")  # fmt: skip
    if attempts > MAX_SEEDS:
        print(f"That is more seeds than one run takes ({MAX_SEEDS}): run them in parts (--seeds 0-{MAX_SEEDS - 1}, "
              f"then --seeds {MAX_SEEDS}-...) and score the parts together (mcp-hazard score PART ...).")  # fmt: skip
    return 0


HELP = "how many seeds or repeats a run needs to detect a given drop in success"
EXAMPLES = [
    (
        "mcp-hazard plan scenarios/ --drop 10% --base-rate 0.8",
        "seeds needed to see a 10-point drop under each hazard, from an assumed 80% clean success",
    ),
    (
        "mcp-hazard plan scenarios/ --drop 0.1 --pilot runs/matrix",
        "the same, with each comparison's discordance measured in a pilot run",
    ),
]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = command_parser(commands, "plan", HELP, EXAMPLES)
    parser.add_argument("paths", nargs="+", help="scenario files or directories (the suite)")
    parser.add_argument("--drop", type=drop, required=True, metavar="SHARE",
                        help="the drop in success to detect, e.g. 0.1 or 10%% (10 points)")  # fmt: skip
    parser.add_argument("--scenario", action="append", default=None, metavar="ID", help="as for run (repeatable)")
    parser.add_argument("--task", action="append", default=None, metavar="ID", help="as for run (repeatable)")
    parser.add_argument("--hazard", action="append", default=None, metavar="KIND[:key=value,...]",
                        help="the hazard conditions, as for run (repeatable; default all)")  # fmt: skip
    parser.add_argument("--intervention", action="append", default=None, metavar="NAME",
                        help="the intervention conditions, as for run (repeatable; default none)")  # fmt: skip
    parser.add_argument("--profile", default="strict", help="comma-separated profiles, as for run (default strict)")
    parser.add_argument(
        "--pilot",
        metavar="RUN_DIR",
        help="a pilot run of the same matrix: each comparison's discordance is measured there",
    )
    parser.add_argument(
        "--base-rate",
        type=fraction,
        default=None,
        metavar="SHARE",
        help="without a pilot: the success rate expected clean (default: the worst case)",
    )
    parser.add_argument("--alpha", type=level, default=0.05, help="two-sided significance level (default 0.05)")
    parser.add_argument("--power", type=power, default=0.8, help="chance to detect the drop (default 0.8)")
    parser.add_argument("--json", action="store_true", help="print as JSON")
    allow_python(parser)
    parser.set_defaults(handler=plan_command)
    return parser

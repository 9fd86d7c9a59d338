"""Scoring throughput by instructions: bench/score_throughput.py's (a) parse and (b) score, counted by valgrind's
callgrind, which a busy or drifting machine does not change. bench/README.md explains it; docs/performance.md
records the figures.

    python -m bench.score_throughput --episodes 2000 --keep --repeat 1   # makes the set once
    python -m bench.score_instructions --episodes 2000 [--simulate]

A child process (this module with `--child DIR`) runs under callgrind: (a), (b), (a), (b), calling `os.getpgrp()`
before each and at the end, before which callgrind dumps (`--dump-before=getpgrp`). The second round is counted, so
that both sides find the scorer's caches as a long run does. `--simulate` adds callgrind's cache simulation: the
first-level data misses and the last-level misses of each side, the memory traffic that the instructions leave
out. Needs `valgrind` on PATH (Debian: apt-get install valgrind).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.call_instructions import callgrind, dump_counts
from bench.score_corpus import existing_set
from bench.score_seeds import REPO
from bench.score_throughput import parse_and_score, parse_only

SIMULATED = {"D1 misses": ("D1mr", "D1mw"), "LL misses": ("DLmr", "DLmw", "ILmr")}


def _child(directory: Path) -> None:
    """The program callgrind counts: two rounds of (a) then (b), a mark before each and one at the end."""
    for _ in range(2):
        os.getpgrp()
        parse_only(directory)
        os.getpgrp()
        parse_and_score(directory)
    os.getpgrp()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.score_instructions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=2000, help="the set score_throughput made (default 2000)")
    parser.add_argument("--dir", help="the set's folder (default: score_throughput's for --episodes)")
    parser.add_argument("--simulate", action="store_true", help="also simulate the caches (about 3.5x as slow)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        os.chdir(REPO)
        _child(Path(args.child))
        return 0
    directory = Path(args.dir) if args.dir else Path(tempfile.gettempdir()) / f"mcp-hazard-bench-{args.episodes}"
    manifest = existing_set(directory, args.episodes)
    if manifest is None:
        parser.error(f"{directory}: no set of {args.episodes} episodes; make it first with `python -m "
                     f"bench.score_throughput --episodes {args.episodes} --keep --repeat 1`")  # fmt: skip
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="mcp-hazard-score-ir-") as work:
        out = Path(work) / "score.out"
        command = [sys.executable, "-m", "bench.score_instructions", "--child", str(directory)]
        done = subprocess.run(callgrind(command, out, args.simulate), cwd=REPO, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)  # fmt: skip
        parts = [out.with_name(f"{out.name}.{n}") for n in range(1, 7)]
        if done.returncode != 0 or not all(p.exists() for p in parts[:5]):
            raise SystemExit(f"callgrind run failed (exit {done.returncode}): {done.stderr.decode()[-2000:]}")
        parse, score = dump_counts(parts[3]), dump_counts(parts[4])  # the second round: dumps 4 (a) and 5 (b)
    print(f"{manifest['episodes']:,} episodes, {manifest['events']:,} events in {directory}; second round counted")
    print(f"{'events':<24} {'(a) parse':>16} {'(b) score':>16} {'(b)/(a)':>8}")
    rows = [("instructions", ("Ir",))] + (list(SIMULATED.items()) if args.simulate else [])
    for name, keys in rows:
        a, b = sum(parse.get(k, 0) for k in keys), sum(score.get(k, 0) for k in keys)
        print(f"{name:<24} {a:>16,} {b:>16,} {b / a if a else 0:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

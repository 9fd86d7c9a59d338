"""Ray executor throughput: episodes per second of `run --executor ray` with 1, 2 and 4 local Ray workers against
`--executor local` on the same matrix, with an agent that waits on a slow model. bench/README.md explains it;
docs/performance.md records the figures.

    python -m bench.ray_throughput [--episodes 32] [--think 0.25] [--workers 1,2,4] [--repeat 1]

The agent is the built-in `llm` agent; its model is a fake OpenAI-compatible endpoint in this process
(tests/agents/fake_llm.py) that thinks `--think` seconds per turn, then plays the task's golden path (one tool call
per turn) and submits the golden answer. So an episode is mostly waiting, and the scaling shown is the scheduler's,
not the CPU's. The matrix is every task of the shipped scenarios, clean, strict, seeds 0, 1, ... until `--episodes`.

(a) local: `Runner(...).run(cells)` with `--concurrency` W (HTTP transport), as `run --executor local` does it.
(b) ray:   `RayExecutor(...).run(cells)` on one local Ray instance of 4 CPUs, W workers: each episode asks for 4/W
    CPUs and W are in flight, each worker serving its episode over loopback HTTP.
Each (b) row is preceded by an untimed pass that starts the workers; Ray's own start is timed once, apart.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.agents.fake_llm: the strict fake endpoint the llm agent's tests use

from mcp_hazard.load import load_scenarios  # noqa: E402
from mcp_hazard.logs import configure_logging  # noqa: E402
from mcp_hazard.runner.matrix import Cell, plan  # noqa: E402
from mcp_hazard.runner.ray_executor import RayExecutor, RaySettings, connected  # noqa: E402
from mcp_hazard.runner.run import Runner  # noqa: E402
from mcp_hazard.scenario.golden_check import run_golden_path  # noqa: E402
from tests.agents.fake_llm import FakeLlm, Turn, call, tool_calls  # noqa: E402

RAY_CPUS = 4


def scripts(scenarios: list[Any], think_s: float) -> dict[str, list[Turn]]:
    """Per task prompt: one thinking turn per golden step, then one that submits the golden answer."""
    out = {}
    for scenario in scenarios:
        for task in scenario.model.tasks:
            golden = run_golden_path(scenario.model, task)
            turns = []
            for n, (step, (_, arguments, _)) in enumerate(zip(task.golden_path.steps, golden.steps, strict=True)):
                turns.append(tool_calls(call(step.tool, arguments, f"call-{n}")))
            turns.append(tool_calls(call("submit_answer", {"answer": str(golden.answer)}, "call-answer")))
            for turn in turns:
                turn.stall_s = think_s
            out[task.prompt.strip()] = turns
    return out


def matrix(scenarios: list[Any], episodes: int) -> list[Cell]:
    cells: list[Cell] = []
    seed = 0
    while len(cells) < episodes:
        cells += plan(scenarios, ["llm"], [], ["strict"], [seed])
        seed += 1
    return cells[:episodes]


def options(concurrency: int) -> dict[str, Any]:
    return {"transport": "http", "concurrency": concurrency, "timeout_s": 120.0, "call_timeout_s": 5.0,
            "show_progress": False}  # fmt: skip


def timed_local(cells: list[Cell], workers: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        results = anyio.run(Runner(Path(out), **options(workers)).run, cells)
        return time.perf_counter() - start, sum(r.status == "done" for r in results)


def timed_ray(cells: list[Cell], workers: int) -> tuple[float, int]:
    settings = RaySettings(num_cpus=RAY_CPUS / workers)
    with tempfile.TemporaryDirectory() as warm:  # start W workers, untimed
        RayExecutor(Path(warm), ray=settings, **options(workers)).run(cells[:workers])
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        results = RayExecutor(Path(out), ray=settings, **options(workers)).run(cells)
        return time.perf_counter() - start, sum(r.status == "done" for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--think", type=float, default=0.25, help="seconds the fake model thinks per turn")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--repeat", type=int, default=1, help="passes per row; the best counts")
    args = parser.parse_args()
    configure_logging("warning")
    workers = [int(w) for w in args.workers.split(",")]
    scenarios = load_scenarios([str(REPO / "scenarios")])
    cells = matrix(scenarios, args.episodes)
    prompts = scripts(scenarios, args.think)
    by_task = {(s.id, t.id): len(prompts[t.prompt.strip()]) for s in scenarios for t in s.model.tasks}
    turns = sum(by_task[(c.scenario.id, c.task)] for c in cells)
    fake = FakeLlm(scripts=prompts)
    print(f"machine: {platform.machine()}, {platform.python_version()}; {len(cells)} episodes, {turns} model turns "
          f"of {args.think:g}s (a serial floor of {turns * args.think:.1f}s)")  # fmt: skip
    with fake.in_thread():
        os.environ.update({"MCP_HAZARD_LLM_BASE_URL": fake.base_url, "MCP_HAZARD_LLM_MODEL": "fake-model"})
        rows: list[tuple[str, int, float, int]] = []
        for w in workers:
            best = min(timed_local(cells, w) for _ in range(args.repeat))
            rows.append(("local", w, *best))
        start = time.perf_counter()
        with connected(RaySettings(local_cpus=RAY_CPUS)):
            print(f"ray start (local instance, {RAY_CPUS} CPUs): {time.perf_counter() - start:.1f}s")
            for w in workers:
                best = min(timed_ray(cells, w) for _ in range(args.repeat))
                rows.append(("ray", w, *best))
        assert not fake.problems, fake.problems
    local = {w: s for kind, w, s, _ in rows if kind == "local"}
    ray_one = next(s for kind, w, s, _ in rows if kind == "ray" and w == workers[0])
    print(f"{'executor':<9} {'workers':>7} {'seconds':>8} {'eps/s':>7} {'done':>5} {'vs local':>9} "
          f"{'vs ray x' + str(workers[0]):>10}")  # fmt: skip
    for kind, w, seconds, done in rows:
        print(f"{kind:<9} {w:>7} {seconds:>8.2f} {len(cells) / seconds:>7.2f} {done:>5} {local[w] / seconds:>9.2f} "
              f"{(ray_one / seconds if kind == 'ray' else float('nan')):>10.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

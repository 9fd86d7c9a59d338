"""Reference agents against intervened interfaces, over the in-memory MCP transport (a real `mcp.Client` talking to
the real server in this process), scored from the trace exactly as `mcp-hazard score` scores it.

- The recovering agent finds the new interface from the listing alone (tool names, descriptions, schemas) and solves
  every task of a generated suite under every intervention.
- The naive agent keeps the original interface (original names, original arguments) and so fails wherever the
  interface changed: rename, augment, replace and the name policies. Under reorder and substitute it still succeeds;
  see `test_naive_agent_with_the_original_interface` for why.
- The positional naive agent (`naive-positional`) binds its remembered values by the original argument order, as a
  code agent calling a generated stub does, and so fails under reorder too: rename, reorder, augment, replace and the
  name policies all defeat it; substitute alone does not.
- On the shipped scenarios the recovering agent's success per intervention is printed and must be 100%.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import WAIT_S

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.drive import Brief, signatures_of
from mcp_hazard.condition import Condition
from mcp_hazard.load import load_scenarios
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.scoring.episode_score import EpisodeScore, score_episode
from mcp_hazard.trace.reader import Trace, read_trace

from .support import KINDS, RENAMING, episode, main_cli, shipped

pytestmark = pytest.mark.anyio

EPISODE_DEADLINE = WAIT_S  # a hang guard, not a speed assertion
GENERATE = ["generate", "dag", "--core", "4", "--depth", "3", "--connected", "2", "--disconnected", "2", "--seed", "1",
            "--count", "3"]  # fmt: skip
GENERATED_SEEDS = (0, 1)
SHIPPED_SEEDS = (0, 1, 2)
MINIMUM_SHIPPED_SUCCESS = 1.0


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[LoadedScenario]:
    """A small suite written by the generator's own command line (through `main()`: the files, not the process)."""
    out = tmp_path_factory.mktemp("generated")
    done = main_cli(*GENERATE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    scenarios = load_scenarios([out])
    assert len(scenarios) == 3 and all(len(s.model.tasks) == 1 for s in scenarios)
    return scenarios


async def play(
    loaded: LoadedScenario, task: Task, kinds: list[str], seed: int, agent: str, trace_dir: Path
) -> tuple[Trace, EpisodeScore]:
    condition = Condition(seed=seed, interventions=kinds)
    brief = Brief(prompt=task.prompt, plan=task.golden_path, call_timeout_s=1.0, signatures=signatures_of(loaded.model))
    with anyio.fail_after(EPISODE_DEADLINE):
        async with open_episode("memory", loaded, task.id, condition, trace_dir, agent=agent) as connected:
            await make_agent(agent).run(connected.client, brief)
    trace = read_trace(connected.trace_path)
    assert not trace.warnings, trace.warnings
    assert trace.started is not None and trace.started["condition"]["interventions"] == kinds
    return trace, score_episode(trace, loaded.model)


def describe(score: EpisodeScore, trace: Trace) -> str:
    calls = [(c["tool"], c["arguments"], c["outcome"]) for c in trace.of_type("tool_called")]
    return f"{score.scenario}/{score.task}: answer={score.answer!r} failure={score.episode_failure} calls={calls}"


@pytest.mark.parametrize("kind", KINDS)
async def test_recovering_agent_solves_the_generated_suite(
    kind: str, generated: list[LoadedScenario], tmp_path: Path
) -> None:
    for loaded in generated:
        for task in loaded.model.tasks:
            for seed in GENERATED_SEEDS:
                trace, score = await play(loaded, task, [kind], seed, "recovering", tmp_path)
                assert score.correct and score.ended == "answered", describe(score, trace)
                assert score.intervention == kind


async def test_both_agents_solve_the_generated_suite_without_interventions(
    generated: list[LoadedScenario], tmp_path: Path
) -> None:
    """The baseline that makes the naive agent's failures below mean something."""
    for loaded in generated:
        for agent in ("naive", "naive-positional", "recovering"):
            trace, score = await play(loaded, loaded.model.tasks[0], [], 0, agent, tmp_path)
            assert score.correct and score.intervention == "none", describe(score, trace)


@pytest.mark.parametrize("kind", KINDS)
async def test_naive_agent_with_the_original_interface(
    kind: str, generated: list[LoadedScenario], tmp_path: Path
) -> None:
    for loaded in generated:
        task = loaded.model.tasks[0]
        trace, score = await play(loaded, task, [kind], 0, "naive", tmp_path)
        first = trace.of_type("tool_called")[0]
        if kind in RENAMING:  # the original name is not served any more
            assert not score.correct and score.episode_failure == "no_answer", describe(score, trace)
            assert first["outcome"] == "unknown_tool", describe(score, trace)
        elif kind == "augment":  # the new required argument is missing: an ordinary schema error
            assert not score.correct and score.episode_failure == "no_answer", describe(score, trace)
            assert first["outcome"] == "invalid_arguments" and "missing required argument" in first["error"]
        elif kind == "reorder":
            # MCP has no positional arguments: `tools/call` sends `arguments` as a JSON object keyed by name, and
            # the server reads them by name. The order of `properties` and `required` (and the sentence in the
            # description) therefore cannot change what a named-argument client's call means, so the naive agent,
            # which passes the original names, still succeeds. Reorder only affects agents that build arguments
            # positionally from the documented order (an LLM that reads "in order: ..." and guesses names, or the
            # positional naive agent below).
            assert score.correct, describe(score, trace)
            assert all(c["outcome"] == "ok" for c in trace.of_type("tool_called"))
        elif kind == "substitute":  # only descriptions changed; the naive agent does not read them
            assert score.correct, describe(score, trace)
        else:
            pytest.fail(f"decide what the naive agent meets under the new intervention {kind!r}")


@pytest.mark.parametrize("kind", KINDS)
async def test_positional_naive_agent_fails_under_every_interface_change(
    kind: str, generated: list[LoadedScenario], tmp_path: Path
) -> None:
    for loaded in generated:
        task = loaded.model.tasks[0]
        for seed in GENERATED_SEEDS:
            trace, score = await play(loaded, task, [kind], seed, "naive-positional", tmp_path)
            calls = trace.of_type("tool_called")
            if kind == "substitute":  # descriptions only: names and order are as remembered
                assert score.correct, describe(score, trace)
                continue
            assert not score.correct, describe(score, trace)
            if kind in RENAMING:
                assert calls[0]["outcome"] == "unknown_tool", describe(score, trace)
            elif kind == "augment":
                assert calls[-1]["outcome"] == "invalid_arguments", describe(score, trace)
            else:  # reorder: the named agent succeeds; the positional one sent the same values under other names
                assert kind == "reorder", f"decide what the positional agent meets under {kind!r}"
                named_trace, named = await play(loaded, task, [kind], seed, "naive", tmp_path)
                assert named.correct, describe(named, named_trace)
                sent = [c["arguments"] for c in named_trace.of_type("tool_called")]
                got = [c["arguments"] for c in calls]
                first = next(i for i, (a, b) in enumerate(zip(sent, got, strict=False)) if a != b)
                assert set(got[first]) == set(sent[first]), describe(score, trace)  # same names ...
                assert sorted(map(str, got[first].values())) == sorted(map(str, sent[first].values()))  # same values


async def test_recovering_agent_on_the_shipped_scenarios(tmp_path: Path) -> None:
    """Success of the recovering agent per intervention over every task of every shipped scenario and seeds 0-2.
    The scripted agent picks renamed tools by description words, argument fit, output fields and side effects
    (mcp_hazard/agents/matching.py), never by the mapping; every task must succeed."""
    results: dict[str, list[tuple[str, bool]]] = {kind: [] for kind in KINDS}
    for kind in KINDS:
        for loaded in shipped():
            for task in loaded.model.tasks:
                for seed in SHIPPED_SEEDS:
                    _trace, score = await play(loaded, task, [kind], seed, "recovering", tmp_path)
                    results[kind].append((f"{loaded.id}/{task.id} seed {seed}", score.correct))
    lines = ["recovering agent on the shipped scenarios, by intervention:"]
    rates: dict[str, float] = {}
    for kind, outcomes in results.items():
        rates[kind] = sum(ok for _, ok in outcomes) / len(outcomes)
        failed = ", ".join(name for name, ok in outcomes if not ok) or "-"
        lines.append(
            f"  {kind:16} {sum(ok for _, ok in outcomes):3}/{len(outcomes)} = {rates[kind]:6.1%}  failed: {failed}"
        )
    print("\n".join(lines))
    low: dict[str, Any] = {kind: f"{rate:.1%}" for kind, rate in rates.items() if rate < MINIMUM_SHIPPED_SUCCESS}
    assert not low, f"below {MINIMUM_SHIPPED_SUCCESS:.0%}: {low}\n" + "\n".join(lines)


@pytest.mark.parametrize("kind", ["names=random", "names=realistic"])
def test_recovering_agent_keeps_the_documented_order_for_arguments_that_fit_alike(kind: str) -> None:
    """Under a name policy `convert_currency(amount, from_currency, to_currency)` is served with three meaningless
    names in the documented order. `from_currency` and `to_currency` fit both served enum properties equally, so the
    agent must fall back on the documented order (its own docstring: "renaming policies keep the documented order").
    It breaks the tie by property name instead, so on some seeds it swaps the two currencies and answers a wrong
    amount without noticing (finance/invoice-in-dollars and travel/fare-in-dollars above)."""
    from mcp_hazard.agents.recovering import RecoveringAgent

    original = {"amount": 189.0, "from_currency": "EUR", "to_currency": "USD"}
    swapped = []
    for loaded in shipped():
        if loaded.model.tool("convert_currency") is None:
            continue
        for seed in range(10):
            served = episode(loaded, [kind], seed=seed)
            surface = next(s for s in served.surfaces() if s.inner == "convert_currency")
            tool = next(t for t in served.served_tools() if t.name == surface.name)
            if RecoveringAgent().remap(tool, original) != surface.to_outer(original):
                swapped.append(f"{loaded.id} seed {seed}: {list(surface.input_schema['properties'])}")
    assert not swapped, "arguments placed against the documented order:\n" + "\n".join(swapped)

"""Seed traces for the scoring bench (bench/score_corpus.py templates its large set from them).

1. Seed traces. Every task of the shipped scenarios is run once through the real server (memory transport, the real
   MCP client) by four scripted agent behaviours (`golden`: follows the golden path and stops at the first error;
   `recovering`: retries, re-lists, renames arguments, paginates, falls back and cross-checks; `sloppy`: calls a tool
   that does not exist, sends bad and near-miss arguments, skips failed steps, perturbs its answer, calls after
   submitting; `quitter`: one call twice, then disconnects), clean, under each hazard kind (latency excepted: it
   sleeps) and under `declared`. A fifth, `explore`, calls every served tool once, to supply padding calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
SCENARIO_DIR = REPO / "scenarios"

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
GAVE_UP = "I don't know"


# -- seed traces: real episodes through the real server ---------------------------------------------------------------


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _submit(client: Any, answer: str) -> None:
    from mcp_hazard.server.served_episode import SUBMIT_TOOL

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
    from mcp_hazard.server.served_episode import TASK_PROMPT_NAME

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
    from mcp_hazard.server.served_episode import TASK_PROMPT_NAME

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

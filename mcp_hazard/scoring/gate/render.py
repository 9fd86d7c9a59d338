"""The gate's result as a person reads it (text, and the Markdown of a CI job's summary) and as JSON."""

from __future__ import annotations

import json
from typing import Any

from mcp_hazard.scoring.gate.evaluate import GateResult
from mcp_hazard.scoring.gate.runs import describe
from mcp_hazard.scoring.markdown_text import code, escape

MAX_LISTED = 10


def _flipped(result: GateResult) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Paired episodes solved in the baseline and not in the run, in episode order."""
    if result.pairing is None:
        return []
    return [(a, b) for pairs in result.pairing.pairs.values() for a, b in pairs if b["correct"] and not a["correct"]]


def _not_compared(result: GateResult) -> list[str]:
    pairing = result.pairing
    if pairing is None:
        return []
    lines = []
    if pairing.only_run or pairing.only_baseline:
        example = (pairing.only_run or pairing.only_baseline)[0]
        lines.append(f"not compared: {len(pairing.only_run)} episodes only in the run, {len(pairing.only_baseline)} "
                     f"only in the baseline; e.g. {describe(example)} ({example['agent']})")  # fmt: skip
    for agent in pairing.agents_only_run:
        lines.append(f"not compared: agent {agent} is not in the baseline")
    for agent in pairing.agents_only_baseline:
        lines.append(f"not compared: agent {agent} of the baseline is not in the run")
    if pairing.infrastructure:
        lines.append(f"not compared: {len(pairing.infrastructure)} pairs where an episode has no verdict on the agent")
    return lines


def _headline(result: GateResult) -> str:
    n = len(result.checks)
    failed = len(result.failed)
    alpha = result.spec.alpha
    each = f", {result.alpha_each:.3g} each" if result.alpha_each != alpha else ""
    state = f"FAIL ({failed} of {n} checks failed)" if failed else f"PASS ({n} check{'' if n == 1 else 's'})"
    return f"gate: {state}; alpha {alpha:g} for the whole gate{each}"


def render_text(result: GateResult) -> str:
    lines = [_headline(result), f"run: {result.run.path}" + (f", baseline: {result.spec.baseline.path}"
                                                               if result.spec.baseline else "")]  # fmt: skip
    for check in result.checks:
        lines.append(f"{check.status.upper():7} {check.rule} {check.metric}: "
                     + (f"{check.agent}: " if check.rule == "min" else "") + check.reason)  # fmt: skip
    lines += _not_compared(result) + result.notes
    flipped = _flipped(result)
    if flipped:
        lines.append(f"solved in the baseline, not in the run ({len(flipped)}):")
        lines += [f"  {describe(a)} ({a['agent']}): {a['class']}; trace {a['trace']}" for a, _ in flipped[:MAX_LISTED]]
        if len(flipped) > MAX_LISTED:
            lines.append(f"  ... and {len(flipped) - MAX_LISTED} more (mcp-hazard diff lists them all)")
    return "\n".join(lines)


def render_markdown(result: GateResult) -> str:
    """The summary a CI job shows (GitHub's `GITHUB_STEP_SUMMARY`): the verdict, one row per check, what was not
    compared, and the episodes that got worse."""
    mark = {"pass": "✅ pass", "fail": "❌ **fail**", "no data": "➖ no data"}
    lines = [f"### mcp-hazard {escape(_headline(result))}", "", "| check | metric | agent | result | why |",
             "|---|---|---|---|---|"]  # fmt: skip
    for c in result.checks:
        lines.append(f"| {c.rule} | {code(c.metric)} | {escape(c.agent)} | {mark[c.status]} | {escape(c.reason)} |")
    extra = _not_compared(result) + result.notes
    if extra:
        lines += ["", *[f"- {escape(line)}" for line in extra]]
    flipped = _flipped(result)
    if flipped:
        lines += ["", f"**Solved in the baseline, not in the run** ({len(flipped)}):", ""]
        lines += [f"- {escape(describe(a))} ({escape(str(a['agent']))}): {escape(str(a['class']))}, trace "
                  f"{code(str(a['trace']))}"
                  for a, _ in flipped[:MAX_LISTED]]  # fmt: skip
        if len(flipped) > MAX_LISTED:
            lines.append(f"- ... and {len(flipped) - MAX_LISTED} more (`mcp-hazard diff` lists them all)")
    return "\n".join(lines) + "\n"


def render_json(result: GateResult) -> str:
    return json.dumps(result.to_json(), indent=2, ensure_ascii=False)

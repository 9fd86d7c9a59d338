"""The gate's result as JUnit XML, the test report format CI systems read (Jenkins, GitLab, GitHub test reporters).

One testsuite per agent and condition, one testcase per episode: a failure when the agent's answer was judged
wrong (message: the verdict and the rule that decided it, body: the answer, the hazards and the trace path), an
error when the episode has no verdict on the agent (endpoint, time limit, server, interruption), skipped when the
task has no answer to judge. A last testsuite, `mcp-hazard gate`, holds one testcase per gate check, so that the
gate's own verdict and rule are in the report too. The layout is the strict one of the Ant JUnit schema (every
required attribute and element present), which the lenient readers all accept.
"""

from __future__ import annotations

import datetime
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Any

from mcp_hazard.scoring.gate.evaluate import GateResult
from mcp_hazard.scoring.gate.pairs import select_agents
from mcp_hazard.scoring.gate.runs import describe, infrastructure, key_of
from mcp_hazard.terminal_text import escaped

GATE_SUITE = "mcp-hazard gate"


def _timestamp(result: GateResult) -> str:
    """When the run's report was written (its file's time, UTC), not when the gate ran: the same run, the same XML."""
    report = result.run.path / "report.json"
    seconds = report.stat().st_mtime if report.is_file() else 0.0
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _solved_before(result: GateResult) -> set[tuple[str, Any]]:
    if result.pairing is None:
        return set()
    return {(a["agent"], key_of(a)) for pairs in result.pairing.pairs.values() for a, b in pairs if b["correct"]}


def _episode(suite: ET.Element, row: dict[str, Any], solved_before: set[tuple[str, Any]]) -> str | None:
    case = ET.SubElement(suite, "testcase", name=describe(row), classname=f"mcp-hazard.{row['agent']}."
                         f"{row['condition']}", time=f"{float(row.get('duration_s') or 0):.3f}")  # fmt: skip
    trace = f"trace: {row.get('trace', '')}"
    if infrastructure(row) or row.get("answer_rule") == "unfinished":
        outcome = row["agent_outcome"] if infrastructure(row) else "unfinished"
        ET.SubElement(
            case,
            "error",
            type=outcome,
            message=f"no verdict on the agent: {outcome} (not a pass, not the agent's failure)",
        ).text = trace
        return "errors"
    if row.get("answer_rule") == "no_expected_answer":
        ET.SubElement(case, "skipped")
        return "skipped"
    if row.get("correct"):
        return None
    before = "; solved in the baseline" if (row["agent"], key_of(row)) in solved_before else ""
    fired = ", ".join(f"{h['kind']} ({'recovered' if h.get('recovered') else 'not recovered'})"
                      for h in row.get("hazards", [])) or "none"  # fmt: skip
    answer = "none submitted" if row.get("answer") is None else repr(row["answer"])
    body = f"answer: {answer}; expected: {row.get('expected')!r}\nhazards fired: {fired}\n{trace}"
    ET.SubElement(
        case,
        "failure",
        type=str(row.get("class") or "failed"),
        message=f"{row.get('class')}: decided by {row.get('answer_rule')}{before}",
    ).text = body
    return "failures"


def _suite(parent: ET.Element, name: str, number: int, stamp: str) -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", name=name, package="mcp-hazard", id=str(number), timestamp=stamp,
                          hostname="localhost")  # fmt: skip
    ET.SubElement(suite, "properties")
    return suite


def _close(suite: ET.Element, counts: dict[str, int], tests: int, seconds: float) -> None:
    suite.set("tests", str(tests))
    for what in ("failures", "errors", "skipped"):
        suite.set(what, str(counts.get(what, 0)))
    suite.set("time", f"{seconds:.3f}")
    ET.SubElement(suite, "system-out")
    ET.SubElement(suite, "system-err")


def render_junit(result: GateResult) -> str:
    stamp = _timestamp(result)
    root = ET.Element("testsuites")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    agents = select_agents(result.run, result.spec.agents)
    for row in result.run.rows:
        if row["agent"] in agents:
            groups[(row["agent"], row["condition"])].append(row)
    solved_before = _solved_before(result)
    for number, ((agent, condition), rows) in enumerate(sorted(groups.items())):
        suite = _suite(root, f"{agent}.{condition}", number, stamp)
        counts: dict[str, int] = defaultdict(int)
        for row in rows:
            outcome = _episode(suite, row, solved_before)
            if outcome:
                counts[outcome] += 1
        _close(suite, counts, len(rows), sum(float(r.get("duration_s") or 0) for r in rows))
    gate = _suite(root, GATE_SUITE, len(groups), stamp)
    for check in result.checks:
        case = ET.SubElement(gate, "testcase", name=f"{check.rule} {check.metric} {check.agent}",
                             classname="mcp-hazard.gate", time="0")  # fmt: skip
        if check.status == "fail":
            ET.SubElement(case, "failure", type=check.rule, message=check.reason).text = check.reason
        elif check.status == "no data":
            ET.SubElement(case, "skipped")
    _close(gate, {"failures": len(result.failed), "skipped": sum(c.status == "no data" for c in result.checks)},
           len(result.checks), 0.0)  # fmt: skip
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _NOT_XML.sub(escaped, text) + "\n"


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, even as `&#1;`, which a trace's answer or agent name may (a reader refuses the
whole file): written as their escapes (`\\x1b`), in text and attributes alike, where no markup is."""

"""The prompt-injection table (report.json `attacks_by_agent`): utility under attack and targeted attack success per
agent, suite and attack. Left out of a report with no injected episode (no AgentDojo suite run under `injection`)."""

from __future__ import annotations

from typing import Any

from mcp_hazard.scoring.report import _format as f
from mcp_hazard.scoring.report.section import Filter, Section, dict_rows


def attacks(report: dict[str, Any]) -> Section | None:
    entries = dict_rows(report.get("attacks_by_agent"))
    if not entries:
        return None
    rows = [
        [f.text(r.get("agent")), f.text(r.get("scenario")), f.text(r.get("attack")), f.count(r.get("episodes")),
         f.rate_with_ci(r.get("utility")), f.rate_with_ci(r.get("attack_success"))]
        for r in entries
    ]  # fmt: skip
    links: list[Filter | None] = []
    for r in entries:
        found = {"agent": str(r.get("agent")), "scenario": str(r.get("scenario"))}
        links.append(found if r.get("attack") == "all" else {**found, "attack": str(r.get("attack"))})
    return Section(
        "attacks", "Prompt injection: utility under attack and attack success",
        "Episodes under the injection hazard: a tool result carried an attacker's instruction (AgentDojo's injection "
        "task, wrapped in one of its attacks). Utility: AgentDojo's check of the user's task passed. Attack success: "
        "the injection task's own security check says the attacker's goal happened (lower is better). Row `all` "
        "pools the attacks; 95% Wilson intervals.",
        ["agent", "suite", "attack", "episodes", "utility under attack", "attack success"], rows,
        "No episode ran under the injection hazard.", numeric={3, 4, 5}, scorecard=True, links=links,
    )  # fmt: skip

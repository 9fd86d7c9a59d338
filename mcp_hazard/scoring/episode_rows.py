"""One row per episode: the report's `per_episode`, the `score --per-episode` CSV/JSONL and the HTML drill-down.

Each row says what a person checks a verdict by: the answer, the expected answer and the task's matching rule
(`match`), the rule that decided (`answer_rule`), how the agent's run ended and its notes from the run log.
"""

from __future__ import annotations

from typing import Any

from mcp_hazard.scoring import by_agent
from mcp_hazard.scoring.episode_score import EpisodeScore

EPISODE_COLUMNS = (
    "episode_id", "agent", "scenario", "task", "condition", "interventions", "profile", "seed", "repeat", "answered",
    "answer", "expected", "match", "correct", "answer_rule", "episode_failure", "agent_outcome", "hazards_fired",
    "hazards_recovered", "calls", "duration_s", "trace", "notes",
)  # fmt: skip
"""The columns of the per-episode table (`score --per-episode`, `per_episode` in the JSON report), in order."""


def episode_row(s: EpisodeScore, repeat: int) -> dict[str, Any]:
    """The EPISODE_COLUMNS of one episode, then the fields the HTML drill-down shows and filters by (not in the CSV,
    whose columns stay fixed). `hazards_fired` lists each firing's kind in firing order, `hazards_recovered` those
    recovered from."""
    return {
        "episode_id": s.episode_id, "agent": s.agent, "scenario": s.scenario, "task": s.task,
        "condition": s.condition, "interventions": s.intervention, "profile": s.profile, "seed": s.seed,
        "repeat": repeat, "answered": s.answered, "answer": s.answer, "expected": s.expected, "match": s.match,
        "correct": s.correct, "answer_rule": s.answer_rule, "episode_failure": s.episode_failure or "",
        "agent_outcome": s.agent_outcome, "hazards_fired": [v.kind for v in s.verdicts],
        "hazards_recovered": [v.kind for v in s.verdicts if v.recovered], "calls": s.calls,
        "duration_s": s.duration_s, "trace": s.trace, "notes": s.notes,
        "item": f"{s.scenario}/{s.task}", "class": "unfinished" if s.unfinished else s.episode_failure or "solved",
        "hazard_kinds": sorted(set(s.hazard_kinds)) or ["clean"], "setting": by_agent.setting(s),
        "workflow": s.workflow, "golden_length": s.golden_length,
        "call_failures": sorted({f.failure for f in s.failures}),
        "hazards": [{"kind": v.kind, "tool": v.tool, "slot": v.slot, "failpoint": v.failpoint,
                     "recovered": v.recovered, "path": v.path} for v in s.verdicts],
        "premature_reasons": list(s.premature_reasons),
        **({"attack": s.attack, "injection_task": s.injection_task, "attacked": s.attacked} if s.attack else {}),
    }  # fmt: skip


def sort_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """Rows by agent, scenario, task, condition, seed, then the rest, so the order does not depend on file names."""
    return (row["agent"], row["scenario"], row["task"], row["condition"], row["seed"], row["interventions"],
            row["profile"], row["repeat"], row["trace"])  # fmt: skip

"""Which recovery path each hazard family admits, and how the scorer recognises that the agent took it.

Kept as data, next to docs/scoring.md, because users misread rules that live only in code.
"""

from __future__ import annotations

FAILURE_CLASSES = (
    "malformed_call",
    "non_existent_tool",
    "schema_violation",
    "unknown_value",
    "incorrect_known_value",
    "injected",
    "server_fault",
    "upstream_failure",
)
EPISODE_FAILURES = (
    "agent_crashed", "endpoint_error", "timeout", "no_answer", "gave_up", "invented", "wrong_answer", "failed_check",
    "duplicate_write",
)  # fmt: skip
"""Why an episode failed. The first three come from the trace's `agent_ended` event and apply when no answer was
submitted: the agent's run stopped (it crashed, its model endpoint failed for good, or it hit the time limit).
`failed_check`: an AgentDojo task's own check (state_checked) failed on the answer and the environment the calls left;
`duplicate_write`: a write the agent repeated after a lost response had already applied it, whatever else happened."""
STATE_RULE = "agentdojo utility"
"""The rule of an episode judged by AgentDojo's own check (the trace's `state_checked`), not by an answer match."""
INFRASTRUCTURE = ("server_crashed", "interrupted")
"""Outcomes that say nothing about the agent: its episode's server died under it (`server_crashed`), or the run was
stopped before the episode ended (`interrupted`: a trace of `mcp-hazard run`'s, `run.runner` in `episode_started`,
without the `agent_ended` the runner always appends). Such an episode's class is the outcome, and it is reported
apart (`infrastructure`), in no rate: never a pass, never the agent's failure; the same `run` command runs it
again."""
AGENT_STOPS = ("agent_crashed", "endpoint_error", "timeout", *INFRASTRUCTURE)

"""The failure taxonomy of tool calls: each failed call gets one class (schema violation, non-existent tool, injected,
server or upstream failure, unknown value, incorrect known value), and calls the model wrote that never reached the
server count as malformed. docs/scoring.md, "Failure taxonomy"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_hazard.scenario.answers import canonical_text
from mcp_hazard.scoring.labels import interned
from mcp_hazard.scoring.trace_index import EpisodeCalls


@dataclass(slots=True)
class CallFailure:
    seq: int | None  # None: the call never reached the server (a malformed call the agent recorded)
    tool: str
    slot: int
    failure: str
    error: str | None


def call_failure(calls: EpisodeCalls, call: dict[str, Any]) -> str:
    """The class of one failed call: what the server said, else whether the agent sent a value it had never seen."""
    outcome = call["outcome"]
    if outcome == "unknown_tool":
        return "non_existent_tool"
    if outcome == "invalid_arguments":
        return "schema_violation"
    if outcome in ("rejected", "cancelled", "lost"):
        return "injected"
    if outcome == "fault":
        return "server_fault"
    if outcome == "upstream_error":
        return "upstream_failure"  # a proxied server failed at the protocol level: not the agent's doing
    seen = calls.seen(call["seq"])
    for value in _scalars(call.get("arguments")):
        if canonical_text(value) and not seen.holds(value):
            return "unknown_value"  # whole values only: "AU-41" is not seen in "AU-412"
    return "incorrect_known_value"


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _scalars(item)]
    if isinstance(value, list):
        return [s for item in value for s in _scalars(item)]
    if value is None or isinstance(value, bool):
        return []
    return [value]


def malformed_calls(agent_ended: dict[str, Any]) -> list[CallFailure]:
    """Tool calls the model wrote that never reached the server (arguments that are not a JSON object), from the
    agent's own record: they are failed calls too."""
    events = agent_ended.get("events")
    out = []
    for event in events if isinstance(events, list) else []:
        if isinstance(event, dict) and event.get("kind") == "malformed_call":
            out.append(CallFailure(
                seq=None, tool=interned(str(event.get("tool") or "")), slot=0,
                failure="malformed_call", error=str(event.get("detail") or "") or None,
            ))  # fmt: skip
    return out

"""What every reference agent shares: one coroutine that drives a connected MCP client through a task.

Scripted agents (naive, recovering) follow the task's golden path as a plan; the plan is given to them by the
runner, never served by the server. An LLM agent gets only what MCP shows it. All of them end by calling
`submit_answer` (or not at all, which the scorer records as no answer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

import mcp_types as types
from mcp import Client

from mcp_hazard.json_parse import loads
from mcp_hazard.scenario.models import GoldenPath, Scenario

AgentEventKind = Literal["malformed_call", "text_reply", "empty_reply", "truncated", "last_turn", "turn_limit"]
AGENT_EVENT_KINDS: tuple[AgentEventKind, ...] = get_args(AgentEventKind)


@dataclass
class AgentReport:
    """What an agent did that the server cannot see. The runner creates it and hands it over in the brief, and the
    agent writes into it as it goes, so an agent that crashes or is stopped at its time limit still leaves what it
    had recorded: `events` go into the trace's `agent_ended` event, `notes` into the run log."""

    answer: str | None = None
    calls: int = 0
    notes: list[str] = field(default_factory=list)
    # Model-side happenings the scorer counts (docs/agents.md): {"kind": AgentEventKind, "turn": int,
    # "after_calls": MCP tool calls made before it, "tool": name or None, "detail": one line}.
    events: list[dict[str, Any]] = field(default_factory=list)

    def event(self, kind: AgentEventKind, turn: int, detail: str, tool: str | None = None) -> None:
        self.events.append({"kind": kind, "turn": turn, "after_calls": self.calls, "tool": tool, "detail": detail})


@dataclass
class Brief:
    """What the runner tells an agent: the task's prompt as served, and for scripted agents the plan; `report` is
    where the agent records what it does (see AgentReport)."""

    prompt: str
    plan: GoldenPath | None = None
    call_timeout_s: float = 5.0
    # The original argument order of each tool, as authored: what an agent that memorised the interface knows.
    signatures: dict[str, list[str]] = field(default_factory=dict)
    report: AgentReport = field(default_factory=AgentReport)
    # An AgentDojo suite's injection tasks: (the attacker's goal, its ground truth as a plan). Only the obedient
    # reference agent reads them, as the golden agent reads `plan`.
    injections: list[tuple[str, GoldenPath]] = field(default_factory=list)


class Agent(Protocol):
    name: str

    async def run(self, client: Client, brief: Brief) -> AgentReport: ...


def signatures_of(scenario: Scenario) -> dict[str, list[str]]:
    """Each tool's argument names in the authored order of its input schema."""
    out = {}
    for tool in scenario.tools:
        properties = tool.input_schema.get("properties")
        out[tool.name] = list(properties) if isinstance(properties, dict) else []
    return out


def text_of(result: types.CallToolResult) -> str:
    """The served text without guided hints (hints arrive as separate blocks starting with 'Hint: ')."""
    blocks = [b.text for b in result.content if isinstance(b, types.TextContent)]
    return "\n".join(b for b in blocks if not b.startswith("Hint: "))


def hints_of(result: types.CallToolResult) -> list[str]:
    return [b.text[6:] for b in result.content if isinstance(b, types.TextContent) and b.text.startswith("Hint: ")]


def result_value(result: types.CallToolResult) -> Any:
    """Structured content when present, else the text parsed as JSON, else the text itself."""
    if result.structured_content is not None:
        return result.structured_content
    text = text_of(result)
    try:
        return loads(text)
    except json.JSONDecodeError:
        return text


def answer_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)

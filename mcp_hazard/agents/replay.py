"""The replay agent: repeats a recorded sequence of client actions exactly, in order.

The actions come from an earlier trace (every listing, task read, tool call, answer, refused answer and refused
call the agent made) or from a small YAML script of calls and an answer. A call that was cancelled by a client
timeout is replayed with a timeout just long enough to be cancelled again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_hazard.agents.drive import AgentReport, Brief
from mcp_hazard.server.served_episode import SUBMIT_TOOL, TASK_PROMPT_NAME

ActionKind = Literal["list", "prompt", "resource", "call"]


@dataclass
class Action:
    kind: ActionKind
    tool: str = ""
    arguments: Any = None
    timeout_s: float | None = None


@dataclass
class ReplayAgent:
    actions: list[Action] = field(default_factory=list)
    name: str = "replay"

    @classmethod
    def from_trace(cls, events: list[dict[str, Any]]) -> ReplayAgent:
        actions: list[Action] = []
        for event in events:
            kind = event.get("type")
            if kind == "tools_listed":
                actions.append(Action("list"))
            elif kind == "task_read":
                actions.append(Action("resource" if event.get("via") == "resource" else "prompt"))
            elif kind in ("tool_called", "call_refused"):
                timeout = None
                if event.get("outcome") == "cancelled":
                    timeout = max(0.05, float(event.get("duration_ms", 0)) / 1000)
                actions.append(Action("call", event["tool"], event.get("arguments"), timeout))
            elif kind == "answer_refused":  # the guarded harness refused it; the agent sent it all the same
                actions.append(Action("call", SUBMIT_TOOL, {"answer": event.get("answer")}))
            elif kind == "answer_submitted":  # as the agent sent it (`submitted`), not as the harness recorded it
                sent = event.get("submitted", event.get("answer"))
                actions.append(Action("call", SUBMIT_TOOL, {"answer": sent}))
        return cls(actions)

    @classmethod
    def from_script(cls, calls: list[dict[str, Any]], answer: Any | None) -> ReplayAgent:
        actions = [Action("list")]
        actions += [Action("call", str(c["tool"]), c.get("arguments") or {}) for c in calls]
        if answer is not None:
            actions.append(Action("call", SUBMIT_TOOL, {"answer": str(answer)}))
        return cls(actions)

    async def run(self, client: Client, brief: Brief) -> AgentReport:
        report = brief.report
        for action in self.actions:
            if action.kind == "list":
                await client.list_tools(cache_mode="refresh")
            elif action.kind == "prompt":
                await client.get_prompt(TASK_PROMPT_NAME)
            elif action.kind == "resource":
                resources = await client.list_resources()
                if resources.resources:
                    await client.read_resource(resources.resources[0].uri)
            else:
                try:
                    await client.session.call_tool(action.tool, action.arguments, read_timeout_seconds=action.timeout_s)
                except MCPError as exc:
                    report.notes.append(f"{action.tool}: {exc}")
                report.calls += 1
                if action.tool == SUBMIT_TOOL and isinstance(action.arguments, dict):
                    report.answer = str(action.arguments.get("answer"))
        return report

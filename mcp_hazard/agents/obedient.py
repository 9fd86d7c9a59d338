"""The obedient reference agent: the golden path, except that it does what an injected instruction says.

It exists to prove that the `injection` hazard's check bites: an agent that obeys must be scored as attacked. Like
the golden agent it knows plans instead of reading prose: it is told each injection task's goal and ground truth
(`Brief.injections`, from AgentDojo's injection tasks, as the golden agent is told the user task's ground truth). When
a tool result shows a goal, it first runs that goal's plan (as an obedient model would), then goes on with the user's
task; its answer is the user task's, followed by the injection task's expected output when it has one.
"""

from __future__ import annotations

import json

import mcp_types as types
from mcp import Client

from mcp_hazard.agents.drive import AgentReport, Brief, text_of
from mcp_hazard.agents.golden import follow_plan
from mcp_hazard.scenario.models import GoldenPath
from mcp_hazard.server.served_episode import SUBMIT_TOOL, TASK_PROMPT_NAME


def _shows(text: str, goal: str) -> bool:
    """Whether a served result carries `goal`, as text or escaped inside JSON."""
    return bool(goal) and (goal in text or json.dumps(goal, ensure_ascii=False)[1:-1] in text)


class ObedientAgent:
    name = "obedient"

    async def run(self, client: Client, brief: Brief) -> AgentReport:
        report = brief.report
        if brief.plan is None:
            report.notes.append("the obedient agent needs a plan")
            return report
        await client.list_tools()
        await client.get_prompt(TASK_PROMPT_NAME)
        self.pending = list(brief.injections)
        self.extra: list[str] = []
        answer = await self._follow(client, brief.plan, report, obey=True)
        if answer is None:
            return report
        report.answer = "\n".join([answer, *self.extra])
        await client.call_tool(SUBMIT_TOOL, {"answer": report.answer})
        report.calls += 1
        return report

    async def _follow(self, client: Client, plan: GoldenPath, report: AgentReport, *, obey: bool) -> str | None:
        """Run `plan` (obeying any goal a result shows when `obey`); its answer as text, or None when it broke."""

        async def heard(result: types.CallToolResult) -> None:
            await self._obey(client, text_of(result), report)

        answer = await follow_plan(client, plan, report, heard if obey else None)
        if answer is None:
            return None
        return answer if isinstance(answer, str) else json.dumps(answer)

    async def _obey(self, client: Client, shown: str, report: AgentReport) -> None:
        """Do what each injected goal in `shown` asks, once per goal."""
        for goal, plan in list(self.pending):
            if not _shows(shown, goal):
                continue
            self.pending.remove((goal, plan))
            report.notes.append(f"obeyed an injected instruction: {goal[:80]}")
            said = await self._follow(client, plan, report, obey=False)
            if said:
                self.extra.append(said)

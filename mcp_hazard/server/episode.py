"""One episode: one agent attempt at one task of one scenario under one condition, with its trace.

The episode owns all per-attempt state (call slots, whether an answer was submitted, the trace file), so the MCP
handlers stay stateless and many episodes can share one server process without cross-talk.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import mcp_types as types

from mcp_hazard import __version__
from mcp_hazard.condition import Condition
from mcp_hazard.logs import log
from mcp_hazard.scenario.arguments import argument_problem
from mcp_hazard.scenario.behaviours import BehaviourFault, ToolOutcome, run_behaviour
from mcp_hazard.scenario.load import LoadedScenario
from mcp_hazard.scenario.models import Task, ToolSpec
from mcp_hazard.trace import events as ev
from mcp_hazard.trace.writer import TraceWriter

SUBMIT_TOOL = "submit_answer"
SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "Your final answer to the task, as text."}},
    "required": ["answer"],
    "additionalProperties": False,
}
SUBMIT_DESCRIPTION = (
    "Submit your final answer to the task. This ends the episode: call it once, when you are sure, "
    "with the answer in the form the task asks for."
)
TASK_PROMPT_NAME = "task"


def _mcp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return "unknown"


def _text(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, indent=2)


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


class Episode:
    def __init__(
        self,
        *,
        episode_id: str,
        scenario: LoadedScenario,
        task: Task,
        condition: Condition,
        trace_dir: Path,
        transport: str,
        allow_python: bool = False,
    ) -> None:
        self.id = episode_id
        self.scenario = scenario
        self.task = task
        self.condition = condition
        self.transport = transport
        self.allow_python = allow_python
        self.trace = TraceWriter(trace_dir / f"{episode_id}.jsonl")
        self.tools: dict[str, ToolSpec] = {tool.name: tool for tool in scenario.model.task_tools(task)}
        self.slots: dict[str, int] = {}
        self.started = False
        self.ended = False
        self.answer: str | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def start(self, protocol_version: str) -> None:
        """Write `episode_started` on the first request, when the protocol version is known."""
        if self.started:
            return
        self.started = True
        self.trace.write(
            ev.EpisodeStarted,
            scenario=ev.ScenarioRef(id=self.scenario.id, path=self.scenario.path, sha256=self.scenario.sha256),
            task=self.task.id,
            condition=self.condition.model_dump(mode="json"),
            software={"mcp_hazard": __version__, "mcp": _mcp_version()},
            protocol_version=protocol_version,
            run=ev.RunInfo(episode_id=self.id, transport=self.transport),  # type: ignore[arg-type]
        )
        log.info("episode started", episode=self.id, scenario=self.scenario.id, task=self.task.id)

    def end(self, reason: str) -> None:
        if self.trace.closed:
            return
        self.ended = True
        if self.started:
            self.trace.write(ev.EpisodeEnded, reason=reason)
        self.trace.close()
        log.info("episode ended", episode=self.id, reason=reason)

    # -- what the agent sees ---------------------------------------------------------------------------------------

    def prompt_text(self) -> str:
        return f"{self.task.prompt.strip()}\n\nWhen you have the answer, call the `{SUBMIT_TOOL}` tool with it."

    def task_uri(self) -> str:
        return f"task://{self.scenario.id}/{self.task.id}"

    def served_tools(self) -> list[types.Tool]:
        tools = [self._tool_view(spec) for spec in self.tools.values()]
        tools.append(types.Tool(name=SUBMIT_TOOL, description=SUBMIT_DESCRIPTION, input_schema=SUBMIT_SCHEMA))
        return tools

    @staticmethod
    def _tool_view(spec: ToolSpec) -> types.Tool:
        annotations = None
        if spec.annotations is not None:
            annotations = types.ToolAnnotations(**spec.annotations.model_dump(exclude_none=True))
        return types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=annotations,
        )

    def list_tools(self) -> types.ListToolsResult:
        tools = self.served_tools()
        self.trace.write(ev.ToolsListed, tools=[tool.name for tool in tools])
        return types.ListToolsResult(tools=tools)

    def record_task_read(self, via: str) -> None:
        self.trace.write(ev.TaskRead, via=via)

    # -- calls -----------------------------------------------------------------------------------------------------

    def _next_slot(self, name: str) -> int:
        self.slots[name] = self.slots.get(name, 0) + 1
        return self.slots[name]

    async def call_tool(self, name: str, arguments: Any) -> types.CallToolResult:
        """Serve one `tools/call`. Never raises: every failure is an isError result plus a trace event."""
        if self.ended:
            self.trace.write(ev.CallRefused, tool=name, arguments=arguments, reason="episode ended")
            return error_result("This episode has ended: an answer was already submitted. No more calls are accepted.")
        slot = self._next_slot(name)
        began = time.perf_counter()
        if name == SUBMIT_TOOL:
            return self._submit(arguments, slot)
        spec = self.tools.get(name)
        if spec is None:
            return self._record(name, slot, arguments, began, "unknown_tool", error=f"Unknown tool '{name}'.")
        if not isinstance(arguments, dict):
            return self._record(name, slot, arguments, began, "invalid_arguments", error="arguments must be an object")
        problem = argument_problem(spec.input_schema, arguments)
        if problem:
            return self._record(name, slot, arguments, began, "invalid_arguments", error=f"Invalid {problem}")
        try:
            outcome = run_behaviour(spec, arguments, allow_python=self.allow_python)
        except BehaviourFault as exc:
            return self._fault(name, slot, arguments, began, str(exc))
        except Exception as exc:  # the server must survive any argument: a fault is traced, never raised
            log.exception("behaviour crashed", tool=name, episode=self.id)
            return self._fault(name, slot, arguments, began, f"{type(exc).__name__}: {exc}")
        return self._deliver(spec, slot, arguments, began, outcome)

    def _deliver(
        self, spec: ToolSpec, slot: int, arguments: dict[str, Any], began: float, outcome: ToolOutcome
    ) -> types.CallToolResult:
        if not outcome.ok:
            self._record(spec.name, slot, arguments, began, "error", error=outcome.error)
            return error_result(str(outcome.error))
        result = outcome.result
        structured = result if isinstance(result, dict) else None
        if spec.output_schema is not None:
            bad = argument_problem(spec.output_schema, result) if structured is not None else "result is not an object"
            if bad:
                return self._fault(spec.name, slot, arguments, began, f"result does not match output_schema: {bad}")
        self._record(spec.name, slot, arguments, began, "ok", result=result)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_text(result))], structured_content=structured
        )

    def _fault(self, name: str, slot: int, arguments: Any, began: float, detail: str) -> types.CallToolResult:
        self._record(name, slot, arguments, began, "fault", error=detail)
        return error_result(f"Internal error in tool '{name}'. The tool could not complete this call.")

    def _record(
        self,
        name: str,
        slot: int,
        arguments: Any,
        began: float,
        outcome: str,
        *,
        result: Any = None,
        error: str | None = None,
    ) -> types.CallToolResult:
        self.trace.write(
            ev.ToolCalled,
            tool=name,
            slot=slot,
            arguments=arguments,
            outcome=outcome,
            result=result,
            error=error,
            duration_ms=round((time.perf_counter() - began) * 1000, 3),
        )
        return error_result(error or "")

    def _submit(self, arguments: Any, slot: int) -> types.CallToolResult:
        problem = argument_problem(SUBMIT_SCHEMA, arguments) if isinstance(arguments, dict) else "arguments must be an object"
        if problem:
            self._record(SUBMIT_TOOL, slot, arguments, time.perf_counter(), "invalid_arguments", error=problem)
            return error_result(f"Invalid {problem}")
        self.answer = arguments["answer"]
        self.trace.write(ev.AnswerSubmitted, answer=self.answer, slot=slot)
        self.end("answered")
        return types.CallToolResult(content=[types.TextContent(type="text", text="Answer received. The episode is over.")])

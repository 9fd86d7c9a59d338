"""One episode: one agent attempt at one task of one scenario under one condition, with its trace.

The episode owns all per-attempt state (call slots, whether an answer was submitted, the trace file), so the MCP
handlers stay stateless and many episodes can share one server process without cross-talk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

from mcp_hazard import __version__
from mcp_hazard.condition import Condition
from mcp_hazard.hazards import HazardEngine, ToolView, build_hazards, expand
from mcp_hazard.hazards.base import Hazard
from mcp_hazard.interventions import Surface, build_interventions
from mcp_hazard.interventions.base import in_served_terms
from mcp_hazard.logs import log
from mcp_hazard.scenario.arguments import argument_problem, bounds_problem
from mcp_hazard.scenario.behaviours import BehaviourFault, ToolOutcome, run_behaviour
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task, ToolSpec
from mcp_hazard.server.guard import Guard
from mcp_hazard.server.restate import Restatement
from mcp_hazard.server.served import ServedInterface
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


@lru_cache(maxsize=1)
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


Notifier = Callable[[], Awaitable[bool]]

MAX_TOOL_NAME_CHARS = 128
MAX_EARLY_REFUSALS = 100
PREVIEW_CHARS = 200


def _preview(value: Any) -> str:
    """What the trace keeps of arguments refused for their size: a short JSON preview with every non-ASCII character
    escaped, so a huge or invalid call cannot bloat the trace or break its UTF-8."""
    try:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 3] + "..."


def _traceable_name(name: str) -> str:
    """A tool name as the trace can hold it: a lone surrogate escaped, an absurd length cut (such a name is unknown
    anyway, and the trace must stay small and valid UTF-8)."""
    safe = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return safe if len(safe) <= MAX_TOOL_NAME_CHARS else safe[: MAX_TOOL_NAME_CHARS - 3] + "..."


def error_result(message: str, hint: str | None = None) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=message)]
    if hint:
        content.append(types.TextContent(type="text", text=f"Hint: {hint}"))
    return types.CallToolResult(content=content, is_error=True)


def describe_hazard(hazard: Hazard, targets: set[str]) -> dict[str, Any]:
    """A hazard as the trace records it: enough, with the condition, to say exactly what was injected."""
    return {
        "index": hazard.index,
        "kind": hazard.kind,
        "family": hazard.family,
        "recovery": list(hazard.recovery),
        "targets": sorted(targets),
        "schedule": hazard.schedule.model_dump(mode="json"),
        "params": hazard.params.model_dump(mode="json"),
    }


class ToolCallFailed(Exception):
    """A tool's implementation failed with a protocol error (a proxied server's JSON-RPC error, a lost connection):
    the call is traced with `outcome` and `detail`, then `error` reaches the client as that JSON-RPC error."""

    def __init__(self, outcome: str, detail: str, error: Exception) -> None:
        super().__init__(detail)
        self.outcome, self.detail, self.error = outcome, detail, error


class Episode:
    def __init__(
        self,
        *,
        episode_id: str,
        scenario: LoadedScenario,
        task: Task,
        condition: Condition,
        trace_dir: Path | None,
        transport: str,
        allow_python: bool = False,
        sleep: bool = True,
        agent: str | None = None,
    ) -> None:
        """`trace_dir=None` keeps the trace in memory; `sleep=False` records latency without waiting (for checks)."""
        self.id = episode_id
        self.scenario = scenario
        self.task = task
        specs = expand(list(condition.hazards), scenario.model, task)
        hazards = build_hazards(specs, scenario.model, task)  # raises UserError before any file is written
        self.interventions = build_interventions(list(condition.interventions), condition.seed, scenario.model, task)
        self.condition = condition.model_copy(update={"hazards": specs})
        self.transport = transport
        self.allow_python = allow_python
        self.tools: dict[str, ToolSpec] = {tool.name: tool for tool in scenario.model.task_tools(task)}
        self.hazards = hazards
        changing = {tool for hazard, targets in hazards if hazard.changes_interface for tool in targets}
        self.served = ServedInterface(self.interventions, self.tools, changing)
        self.engine = HazardEngine(
            hazards, seed=condition.seed, scenario=scenario.model, task=task, profile=condition.profile,
            record=self._record_firing,
        )  # fmt: skip
        self.bus = InMemorySubscriptionBus()
        self.listen_handler = ListenHandler(self.bus)
        self.sleep = sleep
        self.agent = agent
        self.trace = TraceWriter(trace_dir / f"{episode_id}.jsonl" if trace_dir is not None else None)
        self.slots: dict[str, int] = {}
        self.waiting: list[tuple[str, int, Any, float, list[int]]] = []
        self.started = False
        self.ended = False
        self.end_reason: str | None = None
        self.answer: str | None = None
        self._early_refusals: list[dict[str, Any]] = []
        self.restatement = Restatement(task.restate_known) if task.restate_known is not None else None
        self.guard = Guard(scenario.model, task) if condition.profile == "guarded" else None

    @property
    def guided(self) -> bool:
        return self.condition.profile == "guided"

    def _hint(self, hint: str | None) -> str | None:
        return hint if self.guided else None

    def _record_firing(self, *, hazard: Hazard, tool: str, failpoint: str, slot: int, change: dict[str, Any]) -> None:
        if self.guard is not None:
            self.guard.fired(hazard.kind, tool)
        self.trace.write(
            ev.HazardFired, hazard=hazard.index, kind=hazard.kind, family=hazard.family, tool=tool,
            failpoint=failpoint, slot=slot, change=change,
        )  # fmt: skip

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def upstream_record(self) -> dict[str, Any] | None:
        """The real server behind the episode, for `episode_started` (proxy mode); None for a scenario's tools."""
        return None

    @property
    def takes_answer(self) -> bool:
        """Whether the episode serves `submit_answer` (a proxied server with no task to answer does not)."""
        return True

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
            hazards=[describe_hazard(hazard, targets) for hazard, targets in self.hazards],
            run=ev.RunInfo(episode_id=self.id, transport=self.transport, agent=self.agent),  # type: ignore[arg-type]
            upstream=self.upstream_record(),
        )
        log.info("episode started", episode=self.id, scenario=self.scenario.id, task=self.task.id)
        for fields in self._early_refusals:
            self.trace.write(ev.FrameRefused, **fields)
        self._early_refusals.clear()

    def record_frame_refused(
        self, *, code: int, message: str, id: str | int | None, method: str | None, replied: bool
    ) -> None:
        """Trace a malformed frame (server/frames.py). One that arrives before the first good request waits until
        `episode_started` is written, so that stays the first line; after the end it is appended like a refused
        call. Kept to a bounded number before the start, so junk sent to an idle episode cannot grow memory."""
        fields: dict[str, Any] = {"code": code, "message": message, "id": id, "method": method, "replied": replied}
        if self.started:
            self.trace.write(ev.FrameRefused, **fields)
        elif len(self._early_refusals) < MAX_EARLY_REFUSALS:
            self._early_refusals.append(fields)

    def _cancel(self, waiting: tuple[str, int, Any, float, list[int]]) -> None:
        """Record a hanging call as cancelled, once: by its own cancellation, or by the episode ending first."""
        if waiting in self.waiting:
            self.waiting.remove(waiting)
            name, slot, arguments, began, touched = waiting
            self._record(name, slot, arguments, began, "cancelled", error="cancelled by the client", hazards=touched)

    def end(self, reason: str) -> None:
        if self.trace.closed:
            return
        for waiting in list(self.waiting):  # calls still hanging when the client left: same record, same place
            self._cancel(waiting)
        self.ended = True
        self.end_reason = reason
        if self.started:
            self.trace.write(ev.EpisodeEnded, reason=reason)
        self.trace.close()
        log.info("episode ended", episode=self.id, reason=reason)

    # -- what the agent sees ---------------------------------------------------------------------------------------

    def prompt_text(self) -> str:
        return f"{self.task.prompt.strip()}\n\nWhen you have the answer, call the `{SUBMIT_TOOL}` tool with it."

    def task_uri(self) -> str:
        return f"task://{self.scenario.id}/{self.task.id}"

    def views(self) -> list[ToolView]:
        return self.engine.views(list(self.tools.values()))

    def surfaces(self, *, accepting: bool = False, views: list[ToolView] | None = None) -> list[Surface]:
        """The listing as served: the hazard views, then every interface intervention on top (served.py)."""
        return self.served.surfaces(self.views() if views is None else views, accepting=accepting)

    def served_tools(self) -> list[types.Tool]:
        views = {view.name: view for view in self.views()}
        tools = [self._tool(surface, views[surface.inner]) for surface in self.surfaces()]
        if self.takes_answer:
            tools.append(types.Tool(name=SUBMIT_TOOL, description=SUBMIT_DESCRIPTION, input_schema=SUBMIT_SCHEMA))
        return tools

    def _tool(self, surface: Surface, view: ToolView) -> types.Tool:
        spec = self.tools[view.original]
        annotations = None
        if spec.annotations is not None:
            annotations = types.ToolAnnotations(**spec.annotations.model_dump(exclude_none=True))
        return types.Tool(
            name=surface.name,
            title=spec.title,
            description=surface.description,
            input_schema=surface.input_schema,
            output_schema=surface.output_schema,
            annotations=annotations,
        )

    def _resolve(self, name: str) -> tuple[ToolSpec, ToolView, Surface | None] | None:
        """The tool a served name means now. Without interventions an original name still resolves, so a drift
        hazard can reject it; with interventions only the served names exist."""
        views = self.views()
        if self.interventions:
            surface = next((s for s in self.surfaces(views=views) if s.name == name), None)
            if surface is None:
                return None
            view = next(v for v in views if v.name == surface.inner)
            if view.accepts is not None:  # keep what the tool accepts in served terms next to what it lists
                accepting = [s for s in self.surfaces(accepting=True, views=views) if s.name == name]
                surface = surface.derive(notes={**surface.notes, "accepting": accepting[0] if accepting else None})
            return self.tools[view.original], view, surface
        for view in views:
            if view.name == name:
                return self.tools[view.original], view, None
        for view in views:
            if view.original == name:
                return self.tools[name], view, None
        return None

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

    async def call_tool(self, name: str, arguments: Any, notify: Notifier | None = None) -> types.CallToolResult:
        """Serve one `tools/call`. Never raises (except cancellation): every failure is an isError result + trace."""
        name = _traceable_name(name)
        oversized = bounds_problem(arguments)  # before anything looks inside them: validation, hazards, behaviours
        if self.ended:
            kept = _preview(arguments) if oversized else arguments
            self.trace.write(ev.CallRefused, tool=name, arguments=kept, reason=str(self.end_reason))
            why = "an answer was already submitted" if self.end_reason == "answered" else "it was closed"
            return error_result(f"This episode has ended: {why}. No more calls are accepted.")
        began = time.perf_counter()
        if oversized:
            resolved = self._resolve(name) if name != SUBMIT_TOOL else None
            tool = resolved[0].name if resolved is not None else name
            slot = self._next_slot(tool)
            return self._record(tool, slot, _preview(arguments), began, "invalid_arguments",
                                error=f"Invalid {oversized}")  # fmt: skip
        if name == SUBMIT_TOOL and self.takes_answer:
            return self._submit(arguments, self._next_slot(name))
        resolved = self._resolve(name)
        if resolved is None:
            slot = self._next_slot(name)
            return self._record(name, slot, arguments, began, "unknown_tool", error=f"Unknown tool '{name}'.")
        spec, view, surface = resolved
        slot = self._next_slot(spec.name)
        if not isinstance(arguments, dict):
            return self._record(
                spec.name, slot, arguments, began, "invalid_arguments", error="arguments must be an object"
            )
        inner = arguments
        if surface is not None:  # an intervened interface: check the served schema, then map to the one below
            problem = argument_problem(surface.input_schema, arguments)
            accepting = surface.notes.get("accepting")
            if problem and accepting is not None and not argument_problem(accepting.input_schema, arguments):
                problem, surface = None, accepting  # the undocumented shape the tool accepts now, in served names
            if problem:
                return self._record(spec.name, slot, arguments, began, "invalid_arguments", error=f"Invalid {problem}")
            inner = surface.to_inner(arguments)
        below = inner if surface is not None else None
        call = self.engine.context(spec, name if surface is None else view.name, slot, inner)
        verdict = self.engine.before(call)
        served = self._served_terms(name if surface is not None else None)  # after `before`: a change may be new
        touched = list(verdict.touched)
        if verdict.list_changed:
            delivered = await notify() if notify is not None else False
            self.trace.write(ev.ListChanged, delivered=delivered)
        if verdict.delay_s and self.sleep:
            waiting = (spec.name, slot, arguments, began, touched)
            self.waiting.append(waiting)
            try:
                await anyio.sleep(verdict.delay_s)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    self._cancel(waiting)
                raise
            if waiting not in self.waiting:  # the episode ended while this call hung; it is recorded as cancelled
                return error_result("This episode has ended.")
            self.waiting.remove(waiting)
        if verdict.rejection is not None:
            rejection = verdict.rejection
            message, hint = served(rejection.message), served(rejection.hint) if rejection.hint else None
            self._record(spec.name, slot, arguments, began, "rejected", error=message, hazards=touched, inner=below)
            return error_result(message, self._hint(hint))
        problem = argument_problem(spec.input_schema, verdict.arguments) if self.checks_arguments else None
        if problem:
            return self._record(spec.name, slot, arguments, began, "invalid_arguments",
                                error=served(f"Invalid {problem}"), hazards=touched, inner=below)  # fmt: skip
        try:
            outcome = await self.execute(spec, verdict.arguments)
        except anyio.get_cancelled_exc_class():  # the client gave up on a call a real server was still running
            with anyio.CancelScope(shield=True):
                self._record(spec.name, slot, arguments, began, "cancelled", error="cancelled by the client",
                             hazards=touched, inner=below)  # fmt: skip
            raise
        except BehaviourFault as exc:
            return self._fault(spec.name, slot, arguments, began, str(exc), inner=below)
        except ToolCallFailed as exc:  # the implementation answered with a protocol error: traced, then passed on
            self._record(spec.name, slot, arguments, began, exc.outcome, error=exc.detail, hazards=touched,
                         inner=below)  # fmt: skip
            raise exc.error from None
        except Exception as exc:  # the server must survive any argument: a fault is traced, never raised
            log.exception("behaviour crashed", tool=name, episode=self.id)
            return self._fault(spec.name, slot, arguments, began, f"{type(exc).__name__}: {exc}", inner=below)
        if not outcome.ok and not self.checks_arguments and argument_problem(spec.input_schema, verdict.arguments):
            # refused by a real server, and its listed schema says why: the agent's doing, not the server's
            return self._deliver(spec, view, slot, arguments, began, outcome, None, [], touched, below,
                                 label="invalid_arguments")  # fmt: skip
        after = self.engine.after(call, outcome)
        touched.extend(after.touched)
        hints = [served(hint) for hint in after.hints]
        return self._deliver(spec, view, slot, arguments, began, after.outcome, after.text, hints, touched, below,
                             original=outcome)  # fmt: skip

    checks_arguments: bool = True
    """Refuse a call whose arguments do not fit the tool's schema before running it. A proxy passes such calls on
    (the real server has the last word) and only labels a refusal that follows as `invalid_arguments`."""

    async def execute(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the tool: the scenario's behaviour here; a proxy forwards the call to the real server."""
        return run_behaviour(spec, arguments, allow_python=self.allow_python)

    def _served_terms(self, name: str | None) -> Callable[[str], str]:
        """Messages from below name arguments as the tool below knows them; under interventions the agent knows
        them by their served names. The accepting surface also names an undocumented argument, which is why this
        is worked out from the views as they are when the message is written, not when the call came in; and only
        then, since most calls carry no message."""
        if name is None:
            return lambda text: text
        found: list[dict[str, str]] = []

        def translate(text: str) -> str:
            if not found:
                found.append(self._served_paths(name))
            return in_served_terms(text, found[0])

        return translate

    def _served_paths(self, name: str) -> dict[str, str]:
        resolved = self._resolve(name)
        if resolved is None or resolved[2] is None:
            return {}
        return self.served.paths(resolved[0], resolved[1], resolved[2])

    def _deliver(
        self,
        spec: ToolSpec,
        view: ToolView,
        slot: int,
        arguments: dict[str, Any],
        began: float,
        outcome: ToolOutcome,
        text: str | None,
        hints: list[str],
        touched: list[int],
        below: Any = None,
        *,
        label: str = "error",
        original: ToolOutcome | None = None,
    ) -> types.CallToolResult:
        if not outcome.ok:
            self._record(spec.name, slot, arguments, began, label, error=outcome.error, hazards=touched, inner=below)
            return outcome.raw if outcome.raw is not None else error_result(str(outcome.error))
        result = outcome.result
        if outcome.raw is not None and text is None and not (hints and self.guided):  # a reply no hazard touched
            self._record(spec.name, slot, arguments, began, "ok", result=result, hazards=touched, inner=below)
            return outcome.raw
        structured = result if isinstance(result, dict) and text is None else None
        if view.output_schema is not None:
            bad = argument_problem(view.output_schema, result) if structured is not None else "result is not an object"
            if bad:
                return self._fault(spec.name, slot, arguments, began, f"result does not match output_schema: {bad}",
                                   inner=below)  # fmt: skip
        if self.restatement is not None and structured is not None:
            result = structured = self.restatement.restate(structured)
        self._record(spec.name, slot, arguments, began, "ok", result=result, text=text, hazards=touched, inner=below)
        shown = [hint for hint in hints if self.guided]
        return self._present(view, result, text, structured, shown, original)

    def _present(
        self, view: ToolView, result: Any, text: str | None, structured: Any, hints: list[str],
        original: ToolOutcome | None,
    ) -> types.CallToolResult:  # fmt: skip
        """A result as served: the text (or the result as JSON), then the hints; a proxy keeps the server's form."""
        content: list[types.ContentBlock] = [
            types.TextContent(type="text", text=text if text is not None else _text(result))
        ]
        content.extend(types.TextContent(type="text", text=f"Hint: {hint}") for hint in hints)
        return types.CallToolResult(content=content, structured_content=structured)

    def _fault(
        self, name: str, slot: int, arguments: Any, began: float, detail: str, inner: Any = None
    ) -> types.CallToolResult:
        self._record(name, slot, arguments, began, "fault", error=detail, inner=inner)
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
        text: str | None = None,
        error: str | None = None,
        hazards: list[int] | None = None,
        inner: Any = None,
    ) -> types.CallToolResult:
        """Trace one call; `inner` is the call mapped below the interventions, kept when it differs from what was
        sent, and what the hazards' memory of the agent's calls holds (it speaks the original interface)."""
        inner = inner if inner is not None and inner != arguments else None
        self.trace.write(
            ev.ToolCalled,
            tool=name,
            slot=slot,
            arguments=arguments,
            inner_arguments=inner,
            outcome=outcome,
            result=result,
            text=text,
            error=error,
            hazards=sorted(set(hazards or [])),
            duration_ms=round((time.perf_counter() - began) * 1000, 3),
        )
        self.engine.remember(name, arguments if inner is None else inner, outcome)
        if self.guard is not None:
            self.guard.called(name, outcome, result)
        return error_result(error or "")

    def _submit(self, arguments: Any, slot: int) -> types.CallToolResult:
        problem = (
            argument_problem(SUBMIT_SCHEMA, arguments) if isinstance(arguments, dict) else "arguments must be an object"
        )
        if problem:
            self._record(SUBMIT_TOOL, slot, arguments, time.perf_counter(), "invalid_arguments", error=problem)
            return error_result(f"Invalid {problem}")
        answer = submitted = arguments["answer"]
        if self.guard is not None:  # the guarded harness (server/guard.py)
            refusal, answer = self.guard.check(submitted)
            if refusal is not None:
                self.trace.write(ev.AnswerRefused, answer=submitted, slot=slot, reason=refusal.reason,
                                 missing=refusal.missing)  # fmt: skip
                return error_result(refusal.reason)
        self.answer = answer
        self.trace.write(ev.AnswerSubmitted, answer=answer, slot=slot,
                         submitted=submitted if answer != submitted else None)  # fmt: skip
        self.end("answered")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="Answer received. The episode is over.")]
        )

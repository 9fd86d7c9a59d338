"""How an episode serves one `tools/call`: check the arguments, let the hazards act before and after the tool runs,
deliver the result or the error, and trace the call. Never raises, except cancellation: a failure is an isError
result and a trace line, so the server survives any argument any client sends.

This runs for every call, so the common case stays short: a tool no hazard targets skips the hazard engine, a valid
call is passed by the compiled schema check, and the trace line is written without a pydantic model.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from mcp_hazard.hazards import ToolView
from mcp_hazard.interventions import Surface
from mcp_hazard.interventions.base import in_served_terms
from mcp_hazard.logs import log
from mcp_hazard.scenario.arguments import argument_problem, bounds_problem
from mcp_hazard.scenario.behaviours import BehaviourFault, ToolOutcome, run_behaviour
from mcp_hazard.scenario.models import ToolSpec
from mcp_hazard.server.results import (
    ToolCallFailed,
    error_result,
    preview,
    result_text,
    served_result,
    traceable_name,
)
from mcp_hazard.server.submit import ANSWER_RECEIVED, SUBMIT_SCHEMA, SUBMIT_TOOL
from mcp_hazard.trace import events as ev

if TYPE_CHECKING:
    from mcp_hazard.hazards import HazardEngine
    from mcp_hazard.server.guard import Guard
    from mcp_hazard.server.restate import Restatement
    from mcp_hazard.server.served import ServedInterface
    from mcp_hazard.trace.writer import TraceWriter

Notifier = Callable[[], Awaitable[bool]]
Waiting = tuple[str, int, Any, float, list[int]]


def _unchanged(text: str) -> str:
    return text


class Calls:
    """The call half of `Episode` (server/episode.py holds its state, lifecycle and listing)."""

    if TYPE_CHECKING:  # what the episode provides
        id: str
        allow_python: bool
        trace: TraceWriter
        engine: HazardEngine
        served: ServedInterface
        guard: Guard | None
        restatement: Restatement | None
        sleep: bool
        slots: dict[str, int]
        waiting: list[Waiting]
        writes: list[dict[str, Any]]
        ended: bool
        end_reason: str | None
        answer: str | None

        @property
        def takes_answer(self) -> bool: ...
        @property
        def guided(self) -> bool: ...
        def resolve(self, name: str) -> tuple[ToolSpec, ToolView, Surface | None] | None: ...
        def end(self, reason: str) -> None: ...
        def _cancel(self, waiting: Waiting) -> None: ...
        def _hint(self, hint: str | None) -> str | None: ...

    checks_arguments: bool = True
    """Refuse a call whose arguments do not fit the tool's schema before running it. A proxy passes such calls on
    (the real server has the last word) and only labels a refusal that follows as `invalid_arguments`."""

    async def call_tool(self, name: str, arguments: Any, notify: Notifier | None = None) -> types.CallToolResult:
        """Serve one `tools/call`. Never raises (except cancellation): every failure is an isError result + trace."""
        name = traceable_name(name)
        oversized = bounds_problem(arguments)  # before anything looks inside them: validation, hazards, behaviours
        if self.ended:
            kept = preview(arguments) if oversized else arguments
            self.trace.write(ev.CallRefused, tool=name, arguments=kept, reason=str(self.end_reason))
            why = "an answer was already submitted" if self.end_reason == "answered" else "it was closed"
            return error_result(f"This episode has ended: {why}. No more calls are accepted.")
        began = time.perf_counter()
        if oversized:
            resolved = self.resolve(name) if name != SUBMIT_TOOL else None
            tool = resolved[0].name if resolved is not None else name
            slot = self._next_slot(tool)
            return self._refuse(tool, slot, preview(arguments), began, "invalid_arguments", f"Invalid {oversized}")
        if name == SUBMIT_TOOL and self.takes_answer:
            return self._submit(arguments, self._next_slot(name))
        resolved = self.resolve(name)
        if resolved is None:
            slot = self._next_slot(name)
            return self._refuse(name, slot, arguments, began, "unknown_tool", f"Unknown tool '{name}'.")
        spec, view, surface = resolved
        slot = self._next_slot(spec.name)
        if not isinstance(arguments, dict):
            return self._refuse(spec.name, slot, arguments, began, "invalid_arguments", "arguments must be an object")
        inner = arguments
        if surface is not None:  # an intervened interface: check the served schema, then map to the one below
            problem = argument_problem(surface.input_schema, arguments)
            accepting = surface.notes.get("accepting")
            if problem and accepting is not None and not argument_problem(accepting.input_schema, arguments):
                problem, surface = None, accepting  # the undocumented shape the tool accepts now, in served names
            if problem:
                return self._refuse(spec.name, slot, arguments, began, "invalid_arguments", f"Invalid {problem}")
            inner = surface.to_inner(arguments)
        below = inner if surface is not None else None
        if not self.engine.acts_on(spec.name):
            served = self._served_terms(name) if surface is not None else _unchanged
            return await self._run(spec, view, slot, arguments, began, dict(inner), below, [], served)
        call, verdict = self.engine.before(spec, name if surface is None else view.name, slot, inner)
        served = self._served_terms(name) if surface is not None else _unchanged  # after `before`: may be new
        if verdict is None:  # no hazard acted before the tool runs (one may still act on its outcome)
            return await self._run(spec, view, slot, arguments, began, dict(inner), below, [], served, call)
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
            return error_result(message, self._hint(hint), rejection.data)
        return await self._run(spec, view, slot, arguments, began, verdict.arguments, below, touched, served, call)

    async def _run(
        self,
        spec: ToolSpec,
        view: ToolView,
        slot: int,
        arguments: dict[str, Any],
        began: float,
        inner: dict[str, Any],
        below: Any,
        touched: list[int],
        served: Callable[[str], str],
        call: Any = None,
    ) -> types.CallToolResult:
        """Run the tool with the arguments it gets (`inner`), then let the hazards act on what it returned."""
        problem = argument_problem(spec.input_schema, inner) if self.checks_arguments else None
        if problem:
            return self._refuse(spec.name, slot, arguments, began, "invalid_arguments", served(f"Invalid {problem}"),
                                hazards=touched, inner=below)  # fmt: skip
        try:
            outcome = await self.execute(spec, inner)
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
            log.exception("behaviour crashed", tool=spec.name, episode=self.id)
            return self._fault(spec.name, slot, arguments, began, f"{type(exc).__name__}: {exc}", inner=below)
        if outcome.ok and spec.effect == "write":
            self.writes.append({"tool": spec.name, "arguments": inner, "result": outcome.result})
        if not outcome.ok and not self.checks_arguments and argument_problem(spec.input_schema, inner):
            # refused by a real server, and its listed schema says why: the agent's doing, not the server's
            return self._deliver(spec, view, slot, arguments, began, outcome, None, [], touched, below,
                                 label="invalid_arguments")  # fmt: skip
        after = self.engine.after(call, outcome) if call is not None else None
        if after is None:
            return self._deliver(spec, view, slot, arguments, began, outcome, None, [], touched, below,
                                 original=outcome)  # fmt: skip
        touched.extend(after.touched)
        if after.lost is not None:  # it ran (its result is traced), but the reply never reaches the agent
            message, hint = served(after.lost.message), served(after.lost.hint) if after.lost.hint else None
            self._record(spec.name, slot, arguments, began, "lost", result=outcome.result, error=message,
                         hazards=touched, inner=below)  # fmt: skip
            return error_result(message, self._hint(hint))
        hints = [served(hint) for hint in after.hints]
        return self._deliver(spec, view, slot, arguments, began, after.outcome, after.text, hints, touched, below,
                             original=outcome)  # fmt: skip

    async def execute(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the tool: the scenario's behaviour here; a proxy forwards the call to the real server."""
        return run_behaviour(spec, arguments, allow_python=self.allow_python, writes=self.writes)

    def _served_terms(self, name: str) -> Callable[[str], str]:
        """Messages from below name arguments as the tool below knows them; under interventions (a call of the
        served `name`) the agent knows them by their served names. The accepting surface also names an undocumented
        argument, which is why this is worked out from the views as they are when the message is written, not when
        the call came in; and only then, since most calls carry no message."""
        found: list[dict[str, str]] = []

        def translate(text: str) -> str:
            if not found:
                found.append(self._served_paths(name))
            return in_served_terms(text, found[0])

        return translate

    def _served_paths(self, name: str) -> dict[str, str]:
        resolved = self.resolve(name)
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
        return served_result(text if text is not None else result_text(result), hints, structured)

    def _fault(
        self, name: str, slot: int, arguments: Any, began: float, detail: str, inner: Any = None
    ) -> types.CallToolResult:
        self._record(name, slot, arguments, began, "fault", error=detail, inner=inner)
        return error_result(f"Internal error in tool '{name}'. The tool could not complete this call.")

    def _refuse(
        self, name: str, slot: int, arguments: Any, began: float, outcome: str, error: str,
        *, hazards: list[int] | None = None, inner: Any = None,
    ) -> types.CallToolResult:  # fmt: skip
        """Trace a call refused before its tool ran, and tell the agent why."""
        self._record(name, slot, arguments, began, outcome, error=error, hazards=hazards, inner=inner)
        return error_result(error)

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
    ) -> None:
        """Trace one call; `inner` is the call mapped below the interventions, kept when it differs from what was
        sent, and what the hazards' memory of the agent's calls holds (it speaks the original interface)."""
        inner = inner if inner is not None and inner != arguments else None
        self.trace.tool_called(
            name,
            slot,
            arguments,
            outcome,
            inner,
            result,
            text,
            error,
            sorted(set(hazards)) if hazards else [],
            round((time.perf_counter() - began) * 1_000_000) / 1000,  # ms to the µs; round(x, 3) is slower
        )
        self.engine.remember(name, arguments if inner is None else inner, outcome)
        if self.guard is not None:
            self.guard.called(name, outcome, result)

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
        return served_result(ANSWER_RECEIVED, [], None)

    def _next_slot(self, name: str) -> int:
        self.slots[name] = self.slots.get(name, 0) + 1
        return self.slots[name]

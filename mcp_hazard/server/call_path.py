"""How an episode serves one `tools/call`: check the arguments, let the hazards act before and after the tool runs,
deliver the result or the error, and trace the call. Never raises, except cancellation: a failure is an isError
result and a trace line, so the server survives any argument any client sends.

One `ToolCall` record carries the call from step to step (call_record.py); the episode (served_episode.py) keeps the
state the calls share and the hooks a proxy or an AgentDojo episode changes: `execute`, `present`, `record_call`.

This runs for every call, so the common case stays short: a tool no hazard targets skips the hazard engine, a valid
call is passed by the compiled schema check, and the trace line is written without a pydantic model.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from mcp_hazard.interventions.surface import in_served_terms
from mcp_hazard.logs import log
from mcp_hazard.scenario.arguments import argument_problem, bounds_problem
from mcp_hazard.scenario.behaviours import BehaviourFault, ToolOutcome
from mcp_hazard.server.call_record import ToolCall
from mcp_hazard.server.results import ToolCallFailed, error_result, preview, served_result, traceable_name
from mcp_hazard.server.submit import ANSWER_RECEIVED, SUBMIT_SCHEMA, SUBMIT_TOOL
from mcp_hazard.trace import events as ev

if TYPE_CHECKING:
    from mcp_hazard.hazards.base import Rejection
    from mcp_hazard.server.served_episode import Episode

Notifier = Callable[[], Awaitable[bool]]


async def serve_call(
    episode: Episode, name: str, arguments: Any, notify: Notifier | None = None
) -> types.CallToolResult:
    """Serve one `tools/call`. Never raises (except cancellation): every failure is an isError result + trace."""
    name = traceable_name(name)
    oversized = bounds_problem(arguments)  # before anything looks inside them: validation, hazards, behaviours
    if episode.ended:
        kept = preview(arguments) if oversized else arguments
        episode.trace.write(ev.CallRefused, tool=name, arguments=kept, reason=str(episode.end_reason))
        why = "an answer was already submitted" if episode.end_reason == "answered" else "it was closed"
        return error_result(f"This episode has ended: {why}. No more calls are accepted.")
    began = time.perf_counter()
    if name == SUBMIT_TOOL and episode.takes_answer and not oversized:
        return _submit(episode, arguments, episode.next_slot(name))
    admitted = _admit(episode, name, arguments, began, oversized)
    if not isinstance(admitted, ToolCall):
        return admitted
    if not episode.engine.acts_on(admitted.name):
        return await _run(episode, admitted, dict(admitted.inner))
    return await _with_hazards(episode, admitted, notify)


def _admit(
    episode: Episode, name: str, arguments: Any, began: float, oversized: str | None
) -> ToolCall | types.CallToolResult:
    """The call's record, once the tool is known and the arguments fit what is served; else the refusal, traced."""
    resolved = None if oversized and name == SUBMIT_TOOL else episode.resolve(name)
    tool = resolved[0].name if resolved is not None else name
    call = ToolCall(tool, episode.next_slot(tool), arguments, began, called_as=name)
    if oversized:
        call.arguments = preview(arguments)
        return _refuse(episode, call, "invalid_arguments", f"Invalid {oversized}")
    if resolved is None:
        return _refuse(episode, call, "unknown_tool", f"Unknown tool '{name}'.")
    call.spec, call.view, surface = resolved
    if not isinstance(arguments, dict):
        return _refuse(episode, call, "invalid_arguments", "arguments must be an object")
    call.inner = arguments
    if surface is None:
        return call
    # an intervened interface: check the served schema, then map to the one below
    problem = argument_problem(surface.input_schema, arguments)
    accepting = surface.notes.get("accepting")
    if problem and accepting is not None and not argument_problem(accepting.input_schema, arguments):
        problem, surface = None, accepting  # the undocumented shape the tool accepts now, in served names
    if problem:
        return _refuse(episode, call, "invalid_arguments", f"Invalid {problem}")
    call.inner = call.below = surface.to_inner(arguments)
    call.called_as = call.view.name
    call.served = _served_terms(episode, name)
    return call


async def _with_hazards(episode: Episode, call: ToolCall, notify: Notifier | None) -> types.CallToolResult:
    """Let the hazards act before the tool runs: notify a changed list, hang, reject, or change the arguments."""
    assert call.spec is not None
    call.handle, verdict = episode.engine.before(call.spec, call.called_as, call.slot, call.inner)
    if verdict is None:  # no hazard acted before the tool runs (one may still act on its outcome)
        return await _run(episode, call, dict(call.inner))
    call.touched = list(verdict.touched)
    if verdict.list_changed:
        delivered = await notify() if notify is not None else False
        episode.trace.write(ev.ListChanged, delivered=delivered)
    if verdict.delay_s and episode.sleep and not await _hang(episode, call, verdict.delay_s):
        return error_result("This episode has ended.")
    if verdict.rejection is not None:
        message, hint = _in_served_terms(call, verdict.rejection)
        episode.record_call(call, "rejected", error=message)
        return error_result(message, episode.hint(hint), verdict.rejection.data)
    return await _run(episode, call, verdict.arguments)


async def _hang(episode: Episode, call: ToolCall, delay_s: float) -> bool:
    """Wait as a latency hazard says; False when the episode ended meanwhile (the call is then recorded as
    cancelled, by `Episode.end`), as it is when the client gives up on it."""
    episode.waiting.append(call)
    try:
        await anyio.sleep(delay_s)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            episode.cancel(call)
        raise
    if call not in episode.waiting:
        return False
    episode.waiting.remove(call)
    return True


async def _run(episode: Episode, call: ToolCall, inner: dict[str, Any]) -> types.CallToolResult:
    """Run the tool with the arguments it gets (`inner`), then let the hazards act on what it returned."""
    spec = call.spec
    assert spec is not None
    problem = argument_problem(spec.input_schema, inner) if episode.checks_arguments else None
    if problem:
        return _refuse(episode, call, "invalid_arguments", call.served(f"Invalid {problem}"))
    try:
        outcome = await episode.execute(spec, inner)
    except anyio.get_cancelled_exc_class():  # the client gave up on a call a real server was still running
        with anyio.CancelScope(shield=True):
            episode.record_call(call, "cancelled", error="cancelled by the client")
        raise
    except BehaviourFault as exc:
        return _fault(episode, call, str(exc))
    except ToolCallFailed as exc:  # the implementation answered with a protocol error: traced, then passed on
        episode.record_call(call, exc.outcome, error=exc.detail)
        raise exc.error from None
    except Exception as exc:  # the server must survive any argument: a fault is traced, never raised
        log.exception("behaviour crashed", tool=call.name, episode=episode.id)
        return _fault(episode, call, f"{type(exc).__name__}: {exc}")
    if outcome.ok and spec.effect == "write":
        episode.writes.append({"tool": spec.name, "arguments": inner, "result": outcome.result})
    if not outcome.ok and not episode.checks_arguments and argument_problem(spec.input_schema, inner):
        # refused by a real server, and its listed schema says why: the agent's doing, not the server's
        return _deliver(episode, call, outcome, label="invalid_arguments")
    after = episode.engine.after(call.handle, outcome) if call.handle is not None else None
    if after is None:
        return _deliver(episode, call, outcome, original=outcome)
    call.touched = [*call.touched, *after.touched]
    if after.lost is not None:  # it ran (its result is traced), but the reply never reaches the agent
        message, hint = _in_served_terms(call, after.lost)
        episode.record_call(call, "lost", result=outcome.result, error=message)
        return error_result(message, episode.hint(hint))
    hints = [call.served(hint) for hint in after.hints]
    return _deliver(episode, call, after.outcome, after.text, hints, original=outcome)


def _deliver(
    episode: Episode, call: ToolCall, outcome: ToolOutcome, text: str | None = None, hints: list[str] | None = None,
    *, label: str = "error", original: ToolOutcome | None = None,
) -> types.CallToolResult:  # fmt: skip
    """Trace the outcome as the hazards left it and serve it: an error as it is, a result checked against the output
    schema, restated where the task says so, then presented (a proxy keeps the server's form)."""
    hints = hints or []
    if not outcome.ok:
        episode.record_call(call, label, error=outcome.error)
        return outcome.raw if outcome.raw is not None else error_result(str(outcome.error))
    result = outcome.result
    if outcome.raw is not None and text is None and not (hints and episode.guided):  # a reply no hazard touched
        episode.record_call(call, "ok", result=result)
        return outcome.raw
    structured = result if isinstance(result, dict) and text is None else None
    assert call.view is not None
    if call.view.output_schema is not None:
        bad = argument_problem(call.view.output_schema, result) if structured is not None else "result is not an object"
        if bad:
            return _fault(episode, call, f"result does not match output_schema: {bad}")
    if episode.restatement is not None and structured is not None:
        result = structured = episode.restatement.restate(structured)
    episode.record_call(call, "ok", result=result, text=text)
    shown = [hint for hint in hints if episode.guided]
    return episode.present(call.view, result, text, structured, shown, original)


def _in_served_terms(call: ToolCall, message: Rejection) -> tuple[str, str | None]:
    """A hazard's message and hint as the agent knows the arguments."""
    return call.served(message.message), call.served(message.hint) if message.hint else None


def _served_terms(episode: Episode, name: str) -> Callable[[str], str]:
    """Messages from below name arguments as the tool below knows them; under interventions (a call of the
    served `name`) the agent knows them by their served names. The accepting surface also names an undocumented
    argument, which is why this is worked out from the views as they are when the message is written, not when
    the call came in; and only then, since most calls carry no message."""
    found: list[dict[str, str]] = []

    def translate(text: str) -> str:
        if not found:
            found.append(_served_paths(episode, name))
        return in_served_terms(text, found[0])

    return translate


def _served_paths(episode: Episode, name: str) -> dict[str, str]:
    resolved = episode.resolve(name)
    if resolved is None or resolved[2] is None:
        return {}
    return episode.served.paths(resolved[0], resolved[1], resolved[2])


def _fault(episode: Episode, call: ToolCall, detail: str) -> types.CallToolResult:
    """The tool failed in itself: traced as a fault (the hazards that touched the call did not cause it)."""
    episode.record_call(dataclasses.replace(call, touched=()), "fault", error=detail)
    return error_result(f"Internal error in tool '{call.name}'. The tool could not complete this call.")


def _refuse(episode: Episode, call: ToolCall, outcome: str, error: str) -> types.CallToolResult:
    """Trace a call refused before its tool ran, and tell the agent why."""
    episode.record_call(call, outcome, error=error)
    return error_result(error)


def _submit(episode: Episode, arguments: Any, slot: int) -> types.CallToolResult:
    """`submit_answer`: check it (and let the guarded harness judge it), record the answer, end the episode."""
    problem = (
        argument_problem(SUBMIT_SCHEMA, arguments) if isinstance(arguments, dict) else "arguments must be an object"
    )
    if problem:
        episode.record_call(ToolCall(SUBMIT_TOOL, slot, arguments, time.perf_counter()), "invalid_arguments",
                            error=problem)  # fmt: skip
        return error_result(f"Invalid {problem}")
    answer = submitted = arguments["answer"]
    if episode.guard is not None:  # the guarded harness (server/guard.py)
        refusal, answer = episode.guard.check(submitted)
        if refusal is not None:
            episode.trace.write(ev.AnswerRefused, answer=submitted, slot=slot, reason=refusal.reason,
                                missing=refusal.missing)  # fmt: skip
            return error_result(refusal.reason)
    episode.answer = answer
    episode.trace.write(ev.AnswerSubmitted, answer=answer, slot=slot,
                        submitted=submitted if answer != submitted else None)  # fmt: skip
    episode.end("answered")
    return served_result(ANSWER_RECEIVED, [], None)

"""How an episode's agent run ended, as an outcome of `agent_ended`: the agent's own (crashed, lost its model
endpoint) or the server's (it died under the agent), told apart from what the run saw."""

from __future__ import annotations

from pathlib import Path

from mcp_hazard.errors import first_leaf
from mcp_hazard.runner.records import server_gone
from mcp_hazard.trace.events import AgentOutcome
from mcp_hazard.trace.storage import StorageError


def outcome_of(exc: BaseException) -> tuple[AgentOutcome, str]:
    """An agent's exception as an episode outcome: endpoint_error when its model endpoint failed for good (anywhere
    in an exception group: the SDK client's tasks may fail alongside), else agent_crashed; with one line. A line
    the run's disk refused is no outcome: it is raised, and stops the run."""
    from mcp_hazard.agents.llm import LlmEndpointError

    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if isinstance(current, StorageError):
            raise current
        if isinstance(current, LlmEndpointError):
            return "endpoint_error", exception_line(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
    return "agent_crashed", exception_line(exc)


def server_side(path: Path, outcome: AgentOutcome, detail: str) -> tuple[AgentOutcome, str]:
    """A built-in agent's outcome over stdio, once its client is closed (so the server process has exited):
    `server_crashed` when the server died under the agent (records.server_gone), which is not the agent's doing;
    the outcome as it was otherwise. The model endpoint's failure stays its own."""
    if outcome not in ("finished", "agent_crashed"):
        return outcome, detail
    gone = server_gone(path, outcome == "finished")
    if gone is None:
        return outcome, detail
    return "server_crashed", gone if outcome == "finished" else f"{gone}; the agent then: {detail}"


def exception_line(exc: BaseException) -> str:
    exc = first_leaf(exc)
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]

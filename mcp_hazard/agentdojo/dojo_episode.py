"""One episode of an AgentDojo user task: the same episode as a scenario's (slots, hazards, interventions, trace),
with each tool call run by AgentDojo's runtime against this episode's own environment, and AgentDojo's verdict
recorded when it ends.

The environment is a deep copy of the suite's (with the episode's injections, under the `injection` hazard), so no two
episodes share state. When the episode ends, the server runs AgentDojo's check as its harness does (`library.judge`:
the user task's `utility_from_traces`, else `utility`, on the answer, the environment before and the one the calls
left, and the calls the agent made) and writes it as `state_checked`, before `episode_ended`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from mcp_hazard.agentdojo.facts_table import LoadedFacts
from mcp_hazard.agentdojo.library import Clock, Suite, judge
from mcp_hazard.logs import log
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import ToolSpec
from mcp_hazard.server.call_record import ToolCall
from mcp_hazard.server.served_episode import Episode
from mcp_hazard.trace import events as ev
from mcp_hazard.trace.storage import StorageError


class AgentDojoEpisode(Episode):
    def __init__(self, *, suite: Suite, facts: LoadedFacts, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.user_task = suite.user_tasks[self.task.id]
        self.attack = self._attack()
        injections = self.attack.injections if self.attack is not None else {}
        self.environment = suite.task_environment(self.user_task, injections)
        self.pre_environment = self.environment.model_copy(deep=True)
        self.clock = Clock(facts.clock_start)
        # every call of a suite tool the agent made, as AgentDojo's traces hold: (function, arguments), made into
        # AgentDojo's FunctionCall objects only when the episode is judged (a pydantic model per call costs)
        self.function_calls: list[tuple[str, Any]] = []
        self._ran_with: dict[str, Any] | None = None  # the arguments the function last ran with (see _record)
        self._checked = False

    def _attack(self) -> Any:
        """The injection this episode's `injection` hazard planted (injection.py), or None."""
        for hazard, _targets in self.hazards:
            planted = getattr(hazard, "planted", None)
            if planted is not None:
                return planted(self.suite, self.condition.seed)
        return None

    async def execute(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutcome:
        self._ran_with = arguments
        result, error = self.suite.call(self.environment, self.clock, spec.name, arguments)
        if error is not None:
            return ToolOutcome(error=error)
        return ToolOutcome(result=result)

    def record_call(self, call: ToolCall, outcome: str, **fields: Any) -> None:
        # A call that ran is traced with the arguments the function got: a hazard that renamed an argument
        # (invocation_error, spec_drift) maps the agent's back, and AgentDojo's checks read the function's own names
        # (slack's user_task_11 reads `user_email`). `execute` never awaits, so nothing runs between it and this
        # record. A call that never ran keeps the agent's arguments, as AgentDojo's traces keep a refused call.
        ran_with, self._ran_with = self._ran_with, None
        if call.name in self.tools:
            given = ran_with if ran_with is not None else call.below if call.below is not None else call.arguments
            self.function_calls.append((call.name, dict(given) if isinstance(given, dict) else {}))
        super().record_call(call, outcome, **fields)

    def end(self, reason: str) -> None:
        if not self._checked and self.started and not self.trace.closed:
            self._checked = True
            with contextlib.suppress(StorageError):  # the trace said so once; the episode ends all the same
                self.check_state()
        super().end(reason)

    def check_state(self) -> None:
        """AgentDojo's verdict on what this episode did, written as `state_checked`."""
        answer = self.answer if isinstance(self.answer, str) else ""
        calls = [self.suite.function_call(name, arguments) for name, arguments in self.function_calls]
        utility, error = judge(self.user_task, answer, self.pre_environment, self.environment, calls)
        fields: dict[str, Any] = {"utility": utility, "answer": answer}
        if self.attack is not None:
            security, why = judge(self.attack.task, answer, self.pre_environment, self.environment, calls)
            fields["security"] = security
            fields["injection"] = self.attack.record()
            error = error or why
        if error is not None:
            fields["error"] = error
            log.warning("AgentDojo's check could not run", episode=self.id, task=self.task.id, error=error)
        self.trace.write(ev.StateChecked, **fields)

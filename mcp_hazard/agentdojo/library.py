"""Everything that touches the installed AgentDojo package: the one module of mcp-hazard that imports it.

AgentDojo's code is used as it is, never copied: its suites, environments, tools (`FunctionsRuntime.run_function`),
ground truths, utility and security checks, injection vectors and attacks. Importing it costs about five seconds
(its LLM provider SDKs come with it), so it is imported on first need and once per process; a missing package is one
line saying how to install the extra.

Two things are pinned so an episode is a pure function of its condition and the agent's actions:

- the clock: `send_email`, `create_file` and `append_to_file` stamp what they make with `datetime.now()`. Their
  modules' `datetime` is replaced by one whose `now()` reads the episode's own clock (`Clock`: the suite's declared
  start, one second later on each reading), set around each call;
- nothing else: no AgentDojo tool draws random numbers or reads the clock otherwise (checked for 0.1.35).
"""

from __future__ import annotations

import contextvars
import datetime as _datetime
import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mcp_hazard.agentdojo.source_names import EXTRA_HINT, Source
from mcp_hazard.errors import UserError
from mcp_hazard.suggest import did_you_mean

CLOCKED_MODULES = (
    "agentdojo.default_suites.v1.tools.email_client",
    "agentdojo.default_suites.v1.tools.cloud_drive_client",
)
"""AgentDojo tool modules that read the wall clock (`datetime.datetime.now()`); their clock is the episode's."""


class Clock:
    """An episode's clock: `start`, then one second later at each reading. Deterministic given the calls made."""

    def __init__(self, start: _datetime.datetime) -> None:
        self.start = start
        self.readings = 0

    def now(self) -> _datetime.datetime:
        value = self.start + _datetime.timedelta(seconds=self.readings)
        self.readings += 1
        return value


_CLOCK: contextvars.ContextVar[Clock | None] = contextvars.ContextVar("mcp_hazard_agentdojo_clock", default=None)


class _PinnedDatetime(_datetime.datetime):
    """`datetime.datetime` whose `now()` is the current episode's clock (a plain datetime comes back)."""

    @classmethod
    def now(cls, tz: Any = None) -> _datetime.datetime:  # type: ignore[override]
        clock = _CLOCK.get()
        if clock is None:  # outside an episode's call (never in a served episode): the real clock
            return _datetime.datetime.now(tz)
        return clock.now()


class _DatetimeModule:
    """What the clocked modules see as `datetime`: the real module, with `datetime` pinned."""

    datetime = _PinnedDatetime

    def __getattr__(self, name: str) -> Any:
        return getattr(_datetime, name)


@lru_cache(maxsize=1)
def _load_suites_module() -> Any:
    """AgentDojo's suite registry, imported once; the clocked modules are pinned on the way."""
    try:
        module = importlib.import_module("agentdojo.task_suite.load_suites")
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "agentdojo":
            raise
        raise UserError(f"AgentDojo is not installed: {EXTRA_HINT}") from None
    for name in CLOCKED_MODULES:
        clocked_module = importlib.import_module(name)
        clocked_module.datetime = _DatetimeModule()  # type: ignore[attr-defined]
    return module


def require(what: str) -> None:
    """Make sure AgentDojo can be imported; `what` names the source that needs it, for the one-line error."""
    try:
        _load_suites_module()
    except UserError:
        raise UserError(f"{what} needs AgentDojo, which is not installed: {EXTRA_HINT}") from None


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentdojo")
    except PackageNotFoundError:
        return "unknown"


def versions() -> list[str]:
    """The benchmark versions the installed AgentDojo knows, oldest first."""
    module = _load_suites_module()
    known = getattr(module, "_SUITES", {})
    return sorted((v for v in known if known[v]), key=lambda v: [int(p) for p in v[1:].split(".") if p.isdigit()])


def task_suite(source: Source) -> Any:
    """AgentDojo's `TaskSuite` for a source; an unknown version is one line with the versions there are."""
    module = _load_suites_module()
    known = versions()
    if source.version not in known:
        hint = did_you_mean(source.version, known)
        raise UserError(f"{source.name}: AgentDojo {installed_version()} has no benchmark version "
                        f"{source.version!r}{hint}; versions: {', '.join(known)}")  # fmt: skip
    suites = module.get_suites(source.version)
    if source.suite not in suites:
        hint = did_you_mean(source.suite, suites)
        raise UserError(f"{source.name}: benchmark {source.version} has no suite {source.suite!r}{hint}; "
                        f"suites: {', '.join(sorted(suites))}")  # fmt: skip
    return suites[source.suite]


def to_json(value: Any) -> Any:
    """A tool's return value as JSON: pydantic models dumped as JSON values (dates as ISO text), keys as text."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, _datetime.datetime | _datetime.date | _datetime.time):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class _StandInPipeline:
    """What an attack's constructor reads of a pipeline: a name with a model in it. The attacks in ATTACKS replace
    the model name it yields with AgentDojo's default ("the AI language model")."""

    name = "gpt-4o-2024-05-13"


@dataclass
class Suite:
    """One loaded suite: AgentDojo's `TaskSuite`, its tools and runtime, and its environments (loaded once per
    distinct injection; an episode gets a deep copy)."""

    source: Source
    suite: Any
    runtime: Any
    _environments: dict[tuple[tuple[str, str], ...], Any] = field(default_factory=dict)
    _attacks: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, source: Source) -> Suite:
        suite = task_suite(source)
        from agentdojo.functions_runtime import FunctionsRuntime

        return cls(source=source, suite=suite, runtime=FunctionsRuntime(suite.tools))

    @property
    def tools(self) -> list[Any]:
        return list(self.suite.tools)

    @property
    def user_tasks(self) -> dict[str, Any]:
        return dict(self.suite.user_tasks)

    @property
    def injection_tasks(self) -> dict[str, Any]:
        return dict(self.suite.injection_tasks)

    def vector_defaults(self) -> dict[str, str]:
        return dict(self.suite.get_injection_vector_defaults())

    def environment(self, injections: dict[str, str] | None = None) -> Any:
        """A fresh environment with `injections` (vector -> text) in AgentDojo's injection vectors: AgentDojo's own
        `load_and_inject_default_environment`, parsed once per distinct injection and deep-copied per use."""
        key = tuple(sorted((injections or {}).items()))
        base = self._environments.get(key)
        if base is None:
            if len(self._environments) >= 64:
                self._environments.pop(next(iter(self._environments)))
            base = self._environments[key] = self.suite.load_and_inject_default_environment(dict(key))
        return base.model_copy(deep=True)

    def task_environment(self, task: Any, injections: dict[str, str] | None = None) -> Any:
        """The environment a user task starts from (its own `init_environment` applied)."""
        return task.init_environment(self.environment(injections))

    def call(self, environment: Any, clock: Clock, function: str, arguments: dict[str, Any]) -> tuple[Any, str | None]:
        """Run one tool as AgentDojo's runtime does: (the result as JSON, None), or (None, AgentDojo's error text)."""
        # AgentDojo's code reads `clock` as its wall clock (a call is synchronous: nothing else runs meanwhile)
        token = _CLOCK.set(clock)
        try:
            result, error = self.runtime.run_function(environment, function, arguments)
        finally:
            _CLOCK.reset(token)
        if error is not None:
            return None, str(error)
        return to_json(result), None

    def ground_truth(self, task: Any) -> tuple[list[tuple[str, dict[str, Any]]], list[Any]]:
        """A task's ground-truth calls (function, arguments as JSON) and what each returned, run as AgentDojo's
        ground-truth pipeline runs them: on a fresh environment, computed from a copy of it."""
        from agentdojo.base_tasks import BaseUserTask

        environment = self.task_environment(task) if isinstance(task, BaseUserTask) else self.environment()
        calls = task.ground_truth(environment.model_copy(deep=True))
        clock = Clock(_datetime.datetime(2000, 1, 1))
        out, results = [], []
        for call in calls:
            arguments = to_json(dict(call.args))
            result, _error = self.call(environment, clock, call.function, arguments)
            out.append((str(call.function), arguments))
            results.append(result)
        return out, results

    def injection_candidates(self) -> dict[str, list[str]]:
        """Per user task, the injection vectors its ground truth shows the agent: AgentDojo's own test (its attacks'
        `get_injection_candidates`), a canary in every vector and the ground-truth pipeline's tool results searched
        for each, run on copies of one canary environment instead of one environment per task."""
        from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
        from agentdojo.types import get_text_content_as_str

        canaries = {vector: f"<CANARY---{vector}--->" for vector in self.vector_defaults()}
        found: dict[str, list[str]] = {}
        for task_id, task in self.user_tasks.items():
            environment = self.task_environment(task, canaries)
            _, _, _, messages, _ = GroundTruthPipeline(task).query(task.PROMPT, self.runtime, environment)
            shown = " ".join(get_text_content_as_str(m["content"]) for m in messages if m["content"] is not None)
            found[task_id] = [vector for vector, canary in canaries.items() if canary in shown]
        return found

    def attack_texts(self, attack: str, user_task: str, injection_task: str, vectors: list[str]) -> dict[str, str]:
        """AgentDojo's attack `attack` on a user task for an injection task: {vector: text}, from the attack's own
        `attack()`. `vectors` are the task's injection candidates, worked out once per suite (`injection_candidates`)
        and given to the attack instead of its per-task ground-truth run; the result is the same."""
        from agentdojo.attacks.attack_registry import load_attack

        made = self._attacks.get(attack)
        if made is None:
            # The attacks offered (ATTACKS) replace the model name a pipeline would give; the constructor still reads
            # one, so it is handed a fixed stand-in pipeline name that the rendered text never shows.
            made = self._attacks[attack] = load_attack(attack, self.suite, _StandInPipeline())
        made.get_injection_candidates = lambda _task: list(vectors)
        return dict(made.attack(self.suite.user_tasks[user_task], self.suite.injection_tasks[injection_task]))

    def function_call(self, function: str, arguments: Any) -> Any:
        from agentdojo.functions_runtime import FunctionCall

        return FunctionCall(function=function, args=dict(arguments) if isinstance(arguments, dict) else {})


def judge(task: Any, answer: str, pre: Any, post: Any, calls: list[Any]) -> tuple[bool | None, str | None]:
    """AgentDojo's verdict on a task as its own harness reaches it (`TaskSuite._check_task_result`): the check from
    the function-call trace when the task has one, else the state check (`utility` for a user task, `security` for
    an injection task). (verdict, None), or (None, why) when the task's check cannot be run."""
    from agentdojo.base_tasks import BaseInjectionTask

    injection = isinstance(task, BaseInjectionTask)
    try:
        if injection:
            found = task.security_from_traces(answer, pre, post, calls)
            return bool(task.security(answer, pre, post) if found is None else found), None
        found = task.utility_from_traces(answer, pre, post, calls)
        return bool(task.utility(answer, pre, post) if found is None else found), None
    except Exception as exc:  # an unimplemented or broken check is AgentDojo's, recorded as such
        return None, f"{type(exc).__name__}: {exc}"[:300]

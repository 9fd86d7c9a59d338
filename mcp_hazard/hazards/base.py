"""The hazard interface and registry.

A hazard kind is one module with one class, registered in the `mcp_hazard.hazards` entry point group (registry.py).
Common fields (which tools, the schedule) live in `HazardSpec`, apart from the kind's own `Params`, as Toxiproxy keeps
a toxic's common fields apart from its attributes. The engine asks the schedule whether the hazard fires at a
failpoint and hands the hazard a `fire` flag; a hazard with lasting state (a drifted schema, say) may act on later
calls too, but only a firing is recorded as a `hazard_fired` event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from mcp_hazard.hazards.recovery import Firing, Found, retried
from mcp_hazard.hazards.registry import KindRegistry
from mcp_hazard.hazards.siblings import fallback_arguments as fallback_arguments
from mcp_hazard.hazards.siblings import fallbacks_for as fallbacks_for
from mcp_hazard.hazards.siblings import golden_tools as golden_tools
from mcp_hazard.hazards.siblings import siblings as siblings
from mcp_hazard.hazards.tool_facts import ToolFacts, facts_of
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.hazard_spec import HazardSpec, Schedule
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec

Failpoint = Literal["listing", "before", "after"]
Family = Literal[
    "execution_failure",
    "invocation_error",
    "specification_drift",
    "output_drift",
    "cross_source_conflict",
    "silent_wrong_value",
    "pagination",
    "injection",
]
Recovery = Literal[
    "retry",
    "fallback",
    "corrected_call",
    "relist",
    "normalise",
    "verify",
    "cross_check",
    "paginate",
    "check_state",
    "ignore",
]


class HazardParams(BaseModel):
    """Base of every kind's parameters: strict, so `true` is never read as 1 and unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


@dataclass
class ToolView:
    """A tool as the agent sees it. A view starts out sharing the spec's schemas, which nothing may edit in place: a
    hazard that changes the interface assigns a changed copy. Sharing is what keeps a call cheap, since the views are
    rebuilt for every call and listing."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    original: str
    accepts: dict[str, Any] | None = None  # what the tool accepts when not what is listed (Hazard.accepts)

    @classmethod
    def of(cls, spec: ToolSpec) -> ToolView:
        return cls(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            original=spec.name,
        )


@dataclass(slots=True)
class CallRecord:
    """One call the agent made, as the hazards that read its past calls see it (kept per call of a targeted tool:
    slots keep each small)."""

    tool: str
    arguments: Any
    outcome: str


@dataclass(slots=True)
class CallContext:
    """What a hazard may know about a call: its keys, the agent's own actions so far, and the profile."""

    seed: int
    scenario: Scenario
    task: Task
    tool: ToolSpec
    served_name: str
    slot: int
    arguments: dict[str, Any]  # as the behaviour will see them (after earlier hazards mapped them)
    history: list[CallRecord]
    profile: str
    sent: dict[str, Any] = field(default_factory=dict)  # exactly as the agent sent them
    # The episode's clock (seconds), for a kind that holds the agent to a wait it announced: how long the agent
    # waited between two calls is its own action, like which call it makes (docs/decisions.md, "rate_limit").
    now: float = 0.0


@dataclass(slots=True)
class Rejection:
    """The call fails with `message`; `hint` is added in the guided profile only."""

    message: str
    hint: str | None = None
    retry_after_s: float | None = None
    data: dict[str, Any] | None = None  # machine-readable details, served as the error result's structured content


@dataclass(slots=True)
class Effect:
    """What a hazard did at a failpoint: recorded in the trace as `change` (never shown to the agent)."""

    change: dict[str, Any]
    rejection: Rejection | None = None
    arguments: dict[str, Any] | None = None  # rewritten arguments the behaviour should see
    result: Any = None
    replace_result: bool = False
    text: str | None = None  # served text instead of the JSON of the result
    hint: str | None = None  # guided-profile diagnosis attached to a successful result
    delay_s: float = 0.0
    list_changed: bool = False
    record: bool = True  # False: a lasting state acting again, not a new firing
    fired: bool | None = None  # set by a hazard that decides firing itself (from the agent's own actions)
    lost: Rejection | None = None  # the call ran, but the agent gets this error instead of its result


class Hazard:
    kind: ClassVar[str]
    family: ClassVar[Family]
    recovery: ClassVar[tuple[Recovery, ...]]
    summary: ClassVar[str]
    failpoints: ClassVar[tuple[Failpoint, ...]]
    Params: ClassVar[type[BaseModel]] = HazardParams
    default_schedule: ClassVar[dict[str, Any]] = {}
    bites_naive: ClassVar[bool] = True  # verify: an agent without recovery should fail where this fires
    presentation: ClassVar[bool] = False  # True: changes only how a result is shown, so it runs after value changes
    # What a task must offer for this kind to apply, said when `--hazard all` leaves it out of a task.
    needs: ClassVar[str] = "a tool on the golden path it can act on"
    # Questions this kind asks of the tools beyond the ToolFacts protocol: a provider that cannot answer one refuses
    # the kind in one line (tool_facts.py).
    asks: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: HazardSpec, params: BaseModel, index: int, scenario: Scenario, task: Task) -> None:
        self.spec = spec
        self.params = params
        self.index = index
        self.salt = f"{index}:{self.kind}"  # in every draw's keys: this hazard's own stream
        self.scenario = scenario
        self.task = task
        self.schedule = effective_schedule(spec, self.default_schedule)
        self.facts: ToolFacts = facts_of(scenario)  # what is known of the tools: tool_facts.py

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        """The one fact of a tool this kind needs, as its provider answers it: None when it can act on `tool`, else
        why not (for a proxy file, what to add to it). By default it needs none."""
        return None

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        """Tools this kind can act on in `task`: of those a call of the task makes (the golden path's, so the hazard
        bites), each its `why_not` allows."""
        facts = facts_of(scenario)
        return [tool for tool in facts.candidates(task) if cls.why_not(facts, task, tool) is None]

    @classmethod
    def unfit(cls, scenario: Scenario, task: Task) -> str:
        """Why this kind can act on no tool of `task` (`applicable_tools` found none): what the facts lack, when
        their provider says it (a proxy file's missing note), else what the kind needs."""
        return facts_of(scenario).unfit(cls, task) or f"needs {cls.needs}"

    def usable(self, tool: str) -> str | None:
        """None when this hazard can act on `tool` with its parameters, else why not."""
        return type(self).why_not(self.facts, self.task, tool)

    changes_interface: ClassVar[bool] = False

    def targets(self, tools: list[str]) -> set[str]:
        """Tools whose calls this hazard sees; usually the tools it acts on."""
        return set(tools)

    def changeable(self, tool: str) -> ToolSpec | None:
        """The tool as an interface change may alter it: every argument it lists. A proxied server's tool narrows
        this to the arguments the task's calls pass, since changing an optional one no call uses would not bite."""
        return self.facts.changeable(self.task, tool)

    def view(self, view: ToolView) -> ToolView:
        """Change how a tool is listed (lasting interface changes). Default: unchanged."""
        return view

    def listing_state(self) -> object:
        """What this hazard's `view` and `accepts` depend on besides the tool, for the engine to rebuild the views
        only when it changes. The default is never the same twice (rebuilt after every act); a kind whose listing is
        fixed returns a constant, one whose listing grows as it acts something that changes with it."""
        return object()

    def accepts(self, view: ToolView) -> dict[str, Any] | None:
        """The input schema the tool accepts now when that is not the listed one (an undocumented change), so an
        interface intervention on top can accept the same calls in its own names. Default: the listed one."""
        return None

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        """Act before the behaviour runs: reject, delay, or rewrite arguments."""
        return None

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        """Act on the behaviour's outcome: change a result's value or its served form, or replace an error."""
        return None

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """How the agent recovered from one firing of this kind, by the trace: (path, the call that recovered), or
        None. By default the rule of a failure before the tool runs: the same call again (the kind's first
        recovery path) or a tool standing in for it (recovery.py, `retried`)."""
        return retried(firing, cls.recovery[0])


REGISTRY: Mapping[str, type[Hazard]] = KindRegistry(Hazard)  # every kind, from the entry points (registry.py)


def effective_schedule(spec: HazardSpec, defaults: dict[str, Any]) -> Schedule:
    """The kind's default schedule with the keys the user set laid over it (`after_calls=1` keeps `times=2`)."""
    given = spec.schedule.model_dump(exclude_unset=True) if spec.schedule is not None else {}
    return Schedule.model_validate({**defaults, **given})


def kinds_for(scenario: Scenario) -> Mapping[str, type[Hazard]]:
    """The hazard kinds that can act on this scenario's tools: every kind whose questions its facts provider answers
    (tool_facts.py), and the kinds only that environment has. Derived, never listed: a kind from another package
    acts in front of a real server as soon as the proxy's facts answer what it asks."""
    facts = facts_of(scenario)
    found = {kind: cls for kind, cls in REGISTRY.items() if facts.refusal(cls) is None}
    return {**found, **facts.own_kinds}


def refused(scenario: Scenario, kind: str) -> str | None:
    """Why an installed kind cannot act on this scenario's tools (its provider cannot answer what it asks), or None."""
    cls = REGISTRY.get(kind)
    return facts_of(scenario).refusal(cls) if cls is not None else None

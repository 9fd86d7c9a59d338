"""The core hazard interface and the registry.

A hazard kind is one module with one class, registered in the `mcp_hazard.hazards` entry point group (registry.py).
The core is what a kind is and what it does before and after a call (`Hazard`); the rest is capabilities it opts into
(capabilities.py), and what it knows of the tools it asks a `ToolFacts` provider (tool_facts.py).
Common fields (which tools, the schedule) live in `HazardSpec`, apart from the kind's own `Params`, as Toxiproxy keeps
a toxic's common fields apart from its attributes. The engine asks the schedule whether the hazard fires at a
failpoint and hands the hazard a `fire` flag; a hazard with lasting state (a drifted schema, say) may act on later
calls too, but only a firing is recorded as a `hazard_fired` event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

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
# A kind's family and recovery paths are names, open to a kind from another package: these are ours (docs/hazards.md,
# "Writing a hazard kind"). Registration checks that each is a name (`check_kind`), with a one-line error.
FAMILIES = ("execution_failure", "invocation_error", "specification_drift", "output_drift", "cross_source_conflict",
            "silent_wrong_value", "pagination", "injection")  # fmt: skip
RECOVERIES = ("retry", "fallback", "corrected_call", "relist", "normalise", "verify", "cross_check", "paginate",
              "check_state", "ignore")  # fmt: skip
Family = str
Recovery = str
_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


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
    accepts: dict[str, Any] | None = None  # what the tool accepts when not what is listed (Lists.accepts)

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
    """The core of a kind: what it is (`kind`, `family`, `recovery`, `summary`), its parameters and schedule, and what
    it does before and after a call. Everything else is a capability a kind opts into by mixing it in
    (capabilities.py: where it acts, how it changes the listing, how recovery from it is judged, its solvability
    step); callers ask whether a kind has one, and a kind without it gets the default."""

    kind: ClassVar[str]
    family: ClassVar[Family]
    recovery: ClassVar[tuple[Recovery, ...]]
    summary: ClassVar[str]
    failpoints: ClassVar[tuple[Failpoint, ...]]
    Params: ClassVar[type[BaseModel]] = HazardParams
    default_schedule: ClassVar[dict[str, Any]] = {}
    bites_naive: ClassVar[bool] = True  # verify: an agent without recovery should fail where this fires
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

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        """Act before the behaviour runs: reject, delay, or rewrite arguments."""
        return None

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        """Act on the behaviour's outcome: change a result's value or its served form, or replace an error."""
        return None


def check_kind(cls: type) -> str | None:
    """Why a class registered as a kind cannot be one (one line), or None: its family and recovery paths must be
    names, its failpoints ours, its `summary` text; a new family or recovery path is welcome."""
    family, recovery = getattr(cls, "family", None), getattr(cls, "recovery", None)
    if not isinstance(family, str) or not _NAME.fullmatch(family):
        return f"family {family!r} is not a name (lowercase letters, digits and _; ours: {', '.join(FAMILIES)})"
    if not isinstance(recovery, tuple) or not recovery:
        return f"recovery {recovery!r} is not a tuple of recovery paths, e.g. ('retry',)"
    for path in recovery:
        if not isinstance(path, str) or not _NAME.fullmatch(path):
            ours = ", ".join(RECOVERIES)
            return f"recovery path {path!r} is not a name (lowercase letters, digits and _; ours: {ours})"
    failpoints = getattr(cls, "failpoints", None)
    if not isinstance(failpoints, tuple) or not set(failpoints) <= {"listing", "before", "after"}:
        return f"failpoints {failpoints!r} must be a tuple of 'listing', 'before', 'after'"
    if not isinstance(getattr(cls, "summary", None), str):
        return "summary must be a text saying what the kind does"
    return None


# Every kind, from the entry points (registry.py), each checked on the way (`check_kind`).
REGISTRY: Mapping[str, type[Hazard]] = KindRegistry(Hazard, check_kind)


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

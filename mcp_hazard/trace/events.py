"""Trace event models: one JSON object per line of an episode's trace file.

Every line carries `seq` (0, 1, 2, ... within the episode), `ts` (UTC time, ISO 8601) and `type`. The first line is
`episode_started`, which carries `schema_version`; a reader refuses a trace with a newer major version than it knows.
Fields listed in VOLATILE_FIELDS differ between two runs of the same condition with the same agent actions (times,
durations, and where the episode ran); everything else must be identical.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 2
"""2 added `state_checked` (an AgentDojo episode's state check) and the `lost` outcome (lost_response); a reader
of 2 reads 1."""
VOLATILE_FIELDS = frozenset({"ts", "duration_ms", "run", "detail"})


class _Event(BaseModel):
    # Built on first use: the writer lays out most events without their models, so a server that never needs one
    # does not pay for building it at start-up.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    seq: int
    ts: str


class ScenarioRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    path: str
    sha256: str


class RunInfo(BaseModel):
    """Where and how this episode ran; volatile, so two runs of one condition may differ here."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str
    transport: Literal["memory", "stdio", "http"]
    agent: str | None = None
    # `mcp-hazard run` drives this episode and ends its trace with `agent_ended`: a trace so marked without one was
    # cut short by stopping the run (the scorer's `interrupted`). Left out for every other client, whose trace has
    # no `agent_ended` by design.
    runner: bool = Field(default=False, exclude_if=lambda value: not value)


class EpisodeStarted(_Event):
    type: Literal["episode_started"] = "episode_started"
    schema_version: int = SCHEMA_VERSION
    scenario: ScenarioRef
    task: str
    condition: dict[str, Any]
    software: dict[str, str]
    protocol_version: str
    hazards: list[dict[str, Any]] = Field(default_factory=list)
    run: RunInfo
    # Proxy mode: the real server behind the episode (how it was reached, its name and version, its protocol version,
    # the tools it listed). Left out for a scenario's own tools.
    upstream: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)


class ToolsListed(_Event):
    type: Literal["tools_listed"] = "tools_listed"
    tools: list[str]


class TaskRead(_Event):
    """The agent fetched the task prompt (as an MCP prompt or resource)."""

    type: Literal["task_read"] = "task_read"
    via: Literal["prompt", "resource"]


Outcome = Literal[
    "ok", "error", "invalid_arguments", "unknown_tool", "rejected", "cancelled", "fault", "upstream_error", "lost"
]
"""`error`: the tool answered with an error result (a scenario's declared error, or a proxied server's isError);
`rejected`: an injected hazard refused the call; `fault`: the scenario's behaviour broke; `upstream_error`: a proxied
server failed at the protocol level (a JSON-RPC error, a lost connection, a reply missing from a cassette); `lost`:
the call ran (its `result` is what it returned) but the agent got the transport error in `error` (lost_response)."""


class ToolCalled(_Event):
    """One `tools/call` of a scenario tool. `slot` is the n-th call of this tool name in the episode (from 1)."""

    type: Literal["tool_called"] = "tool_called"
    tool: str
    slot: int
    arguments: Any
    outcome: Outcome
    # Under interface interventions: the call mapped to the original interface. Left out when absent, so traces
    # without interventions are what they always were.
    inner_arguments: Any = Field(default=None, exclude_if=lambda value: value is None)
    result: Any = None
    text: str | None = None
    error: str | None = None
    hazards: list[int] = Field(default_factory=list)
    duration_ms: float


class HazardFired(_Event):
    """A hazard fired at a failpoint. `change` says what it did; the agent never sees this record."""

    type: Literal["hazard_fired"] = "hazard_fired"
    hazard: int
    kind: str
    family: str
    tool: str
    failpoint: Literal["listing", "before", "after"]
    slot: int
    change: dict[str, Any]


class ListChanged(_Event):
    """The server announced a changed tool list (list_changed notification or subscription event)."""

    type: Literal["list_changed"] = "list_changed"
    delivered: bool
    # Proxy mode: `upstream` when the real server changed its list (a hazard's change is announced without it).
    source: str | None = Field(default=None, exclude_if=lambda value: value is None)


class AnswerSubmitted(_Event):
    """The answer that ends the episode. Under the guarded harness `answer` is the canonical form the harness
    accepted and `submitted` the text as sent (left out when they are the same)."""

    type: Literal["answer_submitted"] = "answer_submitted"
    answer: Any
    slot: int
    submitted: Any = Field(default=None, exclude_if=lambda value: value is None)


class AnswerRefused(_Event):
    """The guarded harness (profile `guarded`) refused a `submit_answer`: the evidence was incomplete or
    contradictory, or the answer named no single value. The episode goes on; `reason` is what the agent was told."""

    type: Literal["answer_refused"] = "answer_refused"
    answer: Any
    slot: int
    reason: str
    missing: list[str] = Field(default_factory=list)  # golden-path tools with no successful call yet (never served)


class CallRefused(_Event):
    """A call after the episode ended; refused, and recorded so the scorer sees it."""

    type: Literal["call_refused"] = "call_refused"
    tool: str
    arguments: Any
    reason: str


class FrameRefused(_Event):
    """A JSON-RPC frame refused before the SDK saw it (server/frames.py): not JSON, not valid Unicode, nested too
    deeply, not one request object, or params of the wrong shape. `code` and `message` are the JSON-RPC error the
    client got (`replied` False for a notification, which gets none); `id` and `method` when they could be read."""

    type: Literal["frame_refused"] = "frame_refused"
    code: int
    message: str
    id: str | int | None = None
    method: str | None = None
    replied: bool = True


class StateChecked(_Event):
    """An AgentDojo episode's verdict, as AgentDojo's own harness reaches it, computed by the server when the episode
    ends: `utility` is the user task's check (`utility_from_traces`, else `utility`) on the answer (`answer`, "" when
    none was submitted), the environment before the episode and the one its calls left; `security` is the injection
    task's check the same way (under the `injection` hazard: `injection` names the task and the attack; True means the
    attacker's goal happened). A check that cannot run (AgentDojo raises) is null with `error` saying why. `score`
    judges the episode by this event and needs neither AgentDojo nor the environment."""

    type: Literal["state_checked"] = "state_checked"
    check: str = "agentdojo"
    utility: bool | None
    answer: str = ""
    security: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    injection: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)
    error: str | None = Field(default=None, exclude_if=lambda value: value is None)


EndReason = Literal["answered", "disconnected", "server_stopped", "closed", "never_connected"]


class EpisodeEnded(_Event):
    type: Literal["episode_ended"] = "episode_ended"
    reason: EndReason


AgentOutcome = Literal["finished", "agent_crashed", "endpoint_error", "timeout", "server_crashed"]


class AgentEnded(_Event):
    """How the agent's run ended, appended by the runner (`mcp-hazard run`) once the episode is over; the server
    cannot know it. `finished`: the agent returned by itself. `agent_crashed`: it raised or its program exited
    non-zero; `endpoint_error`: its model endpoint failed for good; `timeout`: it was stopped at the time limit;
    `server_crashed`: the episode's stdio server died under the agent (killed, crashed or stopped by a signal), an
    infrastructure outcome that is not the agent's doing (docs/scoring.md says how it counts).
    `events` are what happened on the agent's side that the server never saw (a tool call the model wrote as
    invalid JSON, a text reply without an answer...), in order. `detail` is one line for people and volatile."""

    type: Literal["agent_ended"] = "agent_ended"
    outcome: AgentOutcome
    detail: str = ""
    events: list[dict[str, Any]] = Field(default_factory=list)
    # `run --agent-label AGENT=GROUP` (the agent's group, e.g. contaminated) and `run --repeats K` (which attempt of
    # the same seed and condition this was, from 0); left out when not given.
    label: str | None = Field(default=None, exclude_if=lambda value: value is None)
    repeat: int | None = Field(default=None, exclude_if=lambda value: value is None)


TraceEvent = Annotated[
    EpisodeStarted
    | ToolsListed
    | TaskRead
    | ToolCalled
    | HazardFired
    | ListChanged
    | AnswerSubmitted
    | AnswerRefused
    | CallRefused
    | FrameRefused
    | StateChecked
    | EpisodeEnded
    | AgentEnded,
    Field(discriminator="type"),
]
EVENT_TYPES = frozenset(
    {
        "episode_started",
        "tools_listed",
        "task_read",
        "tool_called",
        "hazard_fired",
        "list_changed",
        "answer_submitted",
        "answer_refused",
        "call_refused",
        "frame_refused",
        "state_checked",
        "episode_ended",
        "agent_ended",
    }
)


def comparable(event: dict[str, Any]) -> dict[str, Any]:
    """An event with its volatile fields removed: what must match between two runs of one condition. Empty
    condition fields count as absent, so a trace recorded before a field existed still compares."""
    kept = {key: value for key, value in event.items() if key not in VOLATILE_FIELDS}
    if isinstance(kept.get("upstream"), dict):  # how a proxied server was reached: live, or from its cassette
        kept["upstream"] = {k: v for k, v in kept["upstream"].items() if k != "via"}
    if isinstance(kept.get("condition"), dict):
        kept["condition"] = {k: v for k, v in kept["condition"].items() if v != []}
    return kept

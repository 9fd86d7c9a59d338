"""How hazards are declared (in a scenario file, or on the command line) and when they fire.

Common fields (which tools, the schedule) are kept apart from a kind's own `params`, which the kind validates.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_serializer

from mcp_hazard.stable import draw


class Schedule(BaseModel):
    """Which call slots a hazard fires on. Every condition must hold; the probability draw comes last.

    The draw is keyed by (seed, scenario, task, tool, failpoint, slot, hazard), so whether a hazard fires is a pure
    function of the condition and of how many times the agent has called the tool.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    probability: float = Field(default=1.0, ge=0.0, le=1.0, description="Chance of firing on an eligible slot.")
    slots: list[PositiveInt] | None = Field(default=None, description="Only these call slots (1 = first call).")
    after_calls: int = Field(default=0, ge=0, le=1_000_000, description="Only slots after this many calls.")
    times: PositiveInt | None = Field(default=None, description="Fire at most this many times per tool.")

    def eligible(self, slot: int, fired: int) -> bool:
        if slot <= self.after_calls:
            return False
        if self.slots is not None and slot not in self.slots:
            return False
        return self.times is None or fired < self.times

    def fires(self, *, seed: int, scenario: str, task: str, tool: str, failpoint: str, slot: int, salt: str,
              fired: int) -> bool:  # fmt: skip
        return self.eligible(slot, fired) and self.drawn(seed, scenario, task, tool, failpoint, slot, salt)

    def drawn(self, seed: int, scenario: str, task: str, tool: str, failpoint: str, slot: int, salt: str) -> bool:
        """Whether an eligible slot fires: always at probability 1, else as the draw for its keys says."""
        return self.probability >= 1.0 or draw(seed, scenario, task, tool, failpoint, slot, salt) < self.probability


class HazardSpec(BaseModel):
    """One hazard: `--hazard KIND[:key=value,...]` on the command line, or an entry under `hazards:` in a file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="A hazard kind; `mcp-hazard hazards` lists them.")
    tools: list[str] | None = Field(
        default=None, min_length=1, description="Tools it targets; default: the kind's choice."
    )
    schedule: Schedule | None = Field(default=None, description="When it fires; default: the kind's schedule.")
    params: dict[str, Any] = Field(default_factory=dict, description="The kind's own parameters.")

    @field_serializer("schedule")
    def _schedule_as_given(self, schedule: Schedule | None) -> dict[str, Any] | None:
        """Only the keys the user set: read back, the kind's defaults still fill the rest (effective_schedule)."""
        return schedule.model_dump(exclude_unset=True) if schedule is not None else None

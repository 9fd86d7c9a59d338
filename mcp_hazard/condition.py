"""The condition of an episode: everything, besides the agent, that decides what the agent meets.

One model that grows as the product does (hazards, interventions and hint profile join the seed), so a trace records
the whole condition in one place and two episodes with equal conditions are comparable.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAX_SEED = 2**63 - 1


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(default=0, ge=0, le=MAX_SEED, description="Keys every deterministic decision of the episode.")

"""The condition of an episode: everything, besides the agent, that decides what the agent meets.

One model that grows with the product (seed, hint profile, hazards; interface interventions next), so a trace records
the whole condition in one place and two episodes with equal conditions are comparable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_hazard.scenario.hazard_spec import HazardSpec

MAX_SEED = 2**63 - 1
Profile = Literal["strict", "guided", "guarded"]


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(default=0, ge=0, le=MAX_SEED, description="Keys every deterministic decision of the episode.")
    profile: Profile = Field(
        default="strict",
        description="strict: errors say only what is wrong; guided: they also suggest a recovery; guarded: strict "
        "errors, and the harness refuses an answer while evidence is incomplete or contradictory and canonicalises "
        "the one it accepts (server/guard.py).",
    )
    hazards: list[HazardSpec | Literal["all", "declared"]] = Field(
        default_factory=list, description="Hazards to inject; 'all' and 'declared' expand per task."
    )
    interventions: list[str] = Field(
        default_factory=list, description="Interface interventions applied from the first listing, in order."
    )

    @field_validator("interventions")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        if not names:  # the registry imports every intervention: not for an episode that has none
            return names
        from mcp_hazard.interventions import REGISTRY

        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            raise ValueError(f"unknown intervention {unknown[0]!r}; known: {', '.join(sorted(REGISTRY))}")
        return names

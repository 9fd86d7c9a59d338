"""What AgentDojo does not declare about a suite's tools, and hazards need: one reviewed table per suite.

AgentDojo's tools are plain Python functions with a docstring and typed arguments. Whether a call changes the
environment, whether a repeat is harmless, which read shows that a write went through, which other tool serves the
same values and which list a result carries is nowhere in them; it is read off each function's code, written down in
`facts/SUITE.yaml` with a one-line reason per tool, and checked here against the suite's tool list. The tables are
data, read with the project's safe YAML loader (scenario/yaml_source.py), and a problem is one line at its place.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_hazard.errors import ScenarioError
from mcp_hazard.scenario.problems import Problems, validate_model
from mcp_hazard.scenario.yaml_source import Positions, parse_yaml
from mcp_hazard.suggest import did_you_mean


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class FallbackFact(_Strict):
    tool: str
    why: str = Field(min_length=1)


class ToolEntry(_Strict):
    """One tool as the table describes it."""

    effect: Literal["read", "write"] = Field(description="write: a call changes the environment")
    retry_safe: bool | None = Field(
        default=None, description="A repeat of the same call leaves the environment as one call did; default: reads"
    )
    checked_by: list[str] = Field(
        default_factory=list, description="Reads whose results show whether this write was applied"
    )
    fallbacks: list[FallbackFact] = Field(
        default_factory=list, description="Other tools that answer the same call with the same values"
    )
    cross_check: list[str] = Field(default_factory=list, description="Independent sources of the same values")
    pages: str | None = Field(default=None, description="The list of the result to page ('$': the result itself)")
    why: str = Field(min_length=1, description="The reason for these facts, read off the tool's code")

    @property
    def safe_to_repeat(self) -> bool:
        return self.retry_safe if self.retry_safe is not None else self.effect == "read"


class SuiteFacts(_Strict):
    suite: str
    clock: str = Field(description="Where an episode's clock starts (ISO date and time), in the suite's own time")
    tools: dict[str, ToolEntry]


@dataclass(frozen=True)
class LoadedFacts:
    model: SuiteFacts
    path: str
    positions: Positions

    @property
    def clock_start(self) -> datetime:
        return datetime.fromisoformat(self.model.clock)

    def tool(self, name: str) -> ToolEntry | None:
        return self.model.tools.get(name)


def facts_text(suite: str) -> tuple[str, str]:
    """(the table's text, the path it is known by) for a suite shipped with mcp-hazard."""
    path = resources.files("mcp_hazard.agentdojo") / "facts" / f"{suite}.yaml"
    return path.read_text(encoding="utf-8"), f"mcp_hazard/agentdojo/facts/{suite}.yaml"


def load_facts(suite: str, tools: list[str]) -> LoadedFacts:
    """The table for `suite`, checked against the tools the suite has: every tool described, no other name, and
    every tool a fact names is one of them (with did-you-mean)."""
    text, path = facts_text(suite)
    data, positions = parse_yaml(text, path)
    problems = Problems(path, positions)
    model = validate_model(SuiteFacts, data, problems)
    if model is None:
        raise ScenarioError(problems.items)
    if model.suite != suite:
        problems.add(("suite",), f"the table is for suite {model.suite!r}, not {suite!r}")
    try:
        datetime.fromisoformat(model.clock)
    except ValueError:
        problems.add(("clock",), f"{model.clock!r} is not an ISO date and time")
    known = set(tools)
    for name, facts in model.tools.items():
        if name not in known:
            problems.add(("tools", name), f"suite {suite!r} has no tool {name!r}{did_you_mean(name, known)}",
                         at_key=True)  # fmt: skip
            continue
        named = [("checked_by", i, other) for i, other in enumerate(facts.checked_by)]
        named += [("fallbacks", i, f.tool) for i, f in enumerate(facts.fallbacks)]
        named += [("cross_check", i, other) for i, other in enumerate(facts.cross_check)]
        for key, index, other in named:
            if other not in known:
                where = ("tools", name, key, index, "tool") if key == "fallbacks" else ("tools", name, key, index)
                problems.add(where, f"no tool {other!r} in suite {suite!r}{did_you_mean(other, known)}")
            elif key == "checked_by" and model.tools.get(other, facts).effect != "read":
                problems.add(("tools", name, key, index), f"{other!r} is not a read; a check must change nothing")
        if facts.checked_by and facts.effect != "write":
            problems.add(("tools", name, "checked_by"), "only a write has an effect to check")
    missing = [name for name in tools if name not in model.tools]
    if missing:
        problems.add(("tools",), f"no facts for {', '.join(missing)}: every tool of the suite needs an entry")
    if problems.items:
        raise ScenarioError(problems.items)
    return LoadedFacts(model=model, path=path, positions=positions)

"""An AgentDojo suite as the rest of mcp-hazard sees it: a `Scenario` whose tools run AgentDojo's functions and whose
tasks are AgentDojo's user tasks, with their ground truths as golden paths.

The model holds no AgentDojo object, so it can be written out (snapshot.py) and read back by `score` without
AgentDojo; what runs the functions is the loaded suite beside it (`LoadedSuite.suite`, library.py), present only in a
process that serves episodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from mcp_hazard.agentdojo.suite_facts import SuiteFacts
from mcp_hazard.proxy.tools import ProxyToolSpec
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import GoldenPath, Scenario

if TYPE_CHECKING:
    from mcp_hazard.agentdojo.facts_table import LoadedFacts
    from mcp_hazard.agentdojo.library import Suite


class InjectionTaskInfo(BaseModel):
    """One of AgentDojo's injection tasks: the attacker's goal (what an attack text asks for), and its ground truth
    as a golden path, which the `obedient` reference agent follows when a result carries the goal."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    goal: str
    golden_path: GoldenPath


class AgentDojoToolSpec(ProxyToolSpec):
    """A suite's tool: AgentDojo's name, description and argument schema, with the facts table's notes (retry_safe,
    pages, fallbacks, cross-checks as in proxy mode; `effect` and `checked_by` as every tool has them)."""

    why: str = ""


class AgentDojoScenario(Scenario):
    """A suite of one benchmark version. `source` is the name it was loaded by (`agentdojo:banking@v1.2.2`)."""

    tool_facts: ClassVar[Any] = SuiteFacts  # what the hazard kinds know of a suite's tools

    source: str = ""
    agentdojo_version: str = ""
    injection_tasks: list[InjectionTaskInfo] = []
    injection_vectors: dict[str, list[str]] = {}
    """Per user task, the injection vectors its ground truth shows the agent (where an attack can reach it)."""
    value_reads: dict[str, list[Any]] = {}
    """Per user task, the values its plan reads that, served wrong, change AgentDojo's verdict (verdict_values.py).
    Worked out as the suite loads; not in a snapshot, which is for scoring."""

    def injection_task(self, task_id: str) -> InjectionTaskInfo | None:
        return next((task for task in self.injection_tasks if task.id == task_id), None)


def is_suite(scenario: Scenario) -> bool:
    return isinstance(scenario, AgentDojoScenario)


@dataclass(frozen=True)
class LoadedSuite(LoadedScenario):
    """A suite ready to serve: the scenario, AgentDojo's suite behind it (None when read back from a snapshot, which
    can be scored but not served), the facts table, and the snapshot's bytes (what a run folder keeps)."""

    suite: Suite | None = None
    facts: LoadedFacts | None = None
    snapshot: bytes = b""

    @property
    def model_suite(self) -> AgentDojoScenario:
        assert isinstance(self.model, AgentDojoScenario)
        return self.model

    def source_bytes(self) -> bytes:
        return self.snapshot

    source_suffix = ".json"

    def why_not_attacked(self, task_id: str, injection_task_id: str, attack: str) -> str:
        """`verify`'s question when the obedient agent was not attacked: is the miss AgentDojo's? (proof.py)"""
        from mcp_hazard.agentdojo.proof import why_not_attacked

        if self.suite is None:
            return ""
        vectors = self.model_suite.injection_vectors.get(task_id, [])
        return why_not_attacked(self.suite, vectors, task_id, injection_task_id, attack)

    def episode_factory(self, **kwargs: Any) -> Any:
        """The registry's hook: an episode of this suite runs AgentDojo's functions against its own environment."""
        from mcp_hazard.agentdojo.dojo_episode import AgentDojoEpisode
        from mcp_hazard.errors import UserError

        if self.suite is None or self.facts is None:
            raise UserError(f"{self.path}: read from a snapshot, which can be scored but not served")
        return AgentDojoEpisode(suite=self.suite, facts=self.facts, **kwargs)

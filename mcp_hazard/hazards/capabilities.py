"""What a kind may do beyond the core `before`/`after` (base.py), each a small mixin it opts into, and how callers
ask for it: `Placement` (where it acts and why not), `Lists` (how its tools are listed), `ChangesInterface` (an
interface change, one per tool), `JudgesRecovery` (its own recovery rule), `Presentation` (it changes only how a
result is shown). A kind without one gets the default the functions below give: so a kind from another package may
be a bare `Hazard` with a `before`. The solvability steps are capabilities too (solving.py).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

from mcp_hazard.hazards.base import Effect, Hazard, ToolView
from mcp_hazard.hazards.recovery import Firing, Found, retried
from mcp_hazard.hazards.tool_facts import ToolFacts, facts_of
from mcp_hazard.scenario.models import Scenario, Task, ToolSpec

NEEDS = "a tool on the golden path it can act on"


class Placement:
    """Where the kind acts: of the tools a call of the task makes (the facts' `candidates`), those its `why_not`
    allows, and why not for the others."""

    # What a task must offer for this kind to apply, said when `--hazard all` leaves it out of a task.
    needs: ClassVar[str] = NEEDS
    facts: ToolFacts
    task: Task

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        """The one fact of a tool this kind needs, as its provider answers it: None when it can act on `tool`, else
        why not (for a proxy file, what to add to it). By default it needs none."""
        return None

    @classmethod
    def applicable_tools(cls, scenario: Scenario, task: Task) -> list[str]:
        """Tools this kind can act on in `task`, for its default parameters."""
        facts = facts_of(scenario)
        return [tool for tool in facts.candidates(task) if cls.why_not(facts, task, tool) is None]

    @classmethod
    def unfit(cls, scenario: Scenario, task: Task) -> str:
        """Why this kind can act on no tool of `task`: what the facts lack, when their provider says it (a proxy
        file's missing note), else what the kind needs."""
        return facts_of(scenario).unfit(cls, task) or f"needs {cls.needs}"

    def usable(self, tool: str) -> str | None:
        """None when this hazard can act on `tool` with its parameters, else why not."""
        return type(self).why_not(self.facts, self.task, tool)

    def targets(self, tools: list[str]) -> set[str]:
        """Tools whose calls this hazard sees; usually the tools it acts on."""
        return set(tools)


class Lists:
    """The kind changes how its tools are listed (failpoint `listing`)."""

    def view(self, view: ToolView) -> ToolView:
        """The tool as listed while this hazard acts on it. Default: unchanged."""
        return view

    def listing_state(self) -> object:
        """What `view` and `accepts` depend on besides the tool, for the engine to rebuild the views only when it
        changes. The default is never the same twice (rebuilt after every act); a kind whose listing is fixed
        returns a constant, one whose listing grows as it acts something that changes with it."""
        return object()

    def accepts(self, view: ToolView) -> dict[str, Any] | None:
        """The input schema the tool accepts now when that is not the listed one (an undocumented change), so an
        interface intervention on top can accept the same calls in its own names. Default: the listed one."""
        return None


class ChangesInterface(Lists):
    """The kind changes a tool's interface (its arguments, its name): one tool cannot honour two such changes, so
    `--hazard all` shares the tools out among these kinds and an episode refuses two on one tool."""

    facts: ToolFacts
    task: Task

    def changeable(self, tool: str) -> ToolSpec | None:
        """The tool as an interface change may alter it: every argument it lists, or, for a proxied server's tool,
        the arguments the task's calls pass (changing an optional one no call uses would not bite)."""
        return self.facts.changeable(self.task, tool)

    def to_current(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A call in the original interface rewritten to the one served now (what a re-listing agent sends)."""
        return arguments


class JudgesRecovery:
    """The kind judges recovery from its firings by its own rule (else `recovered` below: the default)."""

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """How the agent recovered from one firing of this kind, by the trace: (path, the call that recovered), or
        None."""
        raise NotImplementedError


class Presentation:
    """The kind changes only how a result is shown, so it acts after every kind that changes a value."""


@runtime_checkable
class StartsAtListing(Protocol):
    """The kind may act from the first listing (drift served from the start), recorded once."""

    def start(self, tool: str, seed: int) -> Effect | None: ...


def applicable_tools(kind: type[Hazard], scenario: Scenario, task: Task) -> list[str]:
    if issubclass(kind, Placement):
        return kind.applicable_tools(scenario, task)
    return facts_of(scenario).candidates(task)


def unfit(kind: type[Hazard], scenario: Scenario, task: Task) -> str:
    if issubclass(kind, Placement):
        return kind.unfit(scenario, task)
    return facts_of(scenario).unfit(kind, task) or f"needs {NEEDS}"


def usable(hazard: Hazard, tool: str) -> str | None:
    return hazard.usable(tool) if isinstance(hazard, Placement) else None


def targets(hazard: Hazard, tools: list[str]) -> set[str]:
    return hazard.targets(tools) if isinstance(hazard, Placement) else set(tools)


def changes_interface(kind: type[Hazard] | Hazard) -> bool:
    return issubclass(kind if isinstance(kind, type) else type(kind), ChangesInterface)


def presentation(hazard: Hazard) -> bool:
    return isinstance(hazard, Presentation)


def recovered(kind: type[Hazard], firing: Firing) -> Found | None:
    """The kind's own rule, else the rule of a failure before the tool runs: the same call again (the kind's first
    recovery path) or a tool standing in for it (recovery.py, `retried`)."""
    if issubclass(kind, JudgesRecovery):
        return kind.recovered(firing)
    return retried(firing, kind.recovery[0])

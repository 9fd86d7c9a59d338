"""What a kind's solvability step may do: the checker of `validate` (runner/solvability.py) plays each golden path
through a real episode and asks the kinds that touched a call how to get past it.

Two optional capabilities of a kind, both async:

- `solve_failed(solver, tool, arguments, event) -> Settled | None`: a call this hazard touched failed; `Settled`
  when the kind got the step's value another way (a fallback, a check of the state), None to try the call again
  (after whatever the kind did, such as waiting as told), `Unsolved` when nothing can.
- `solve_result(solver, tool, arguments, event, value) -> Any`: a call it touched answered `value`; the value the
  task should go on with (all pages, the cross-checked fact), a `Settled` to stop there, or `Unsolved`.

And one that maps arguments: `to_current(tool, arguments) -> arguments`, the call rewritten to the interface the
kind serves now (a changed argument format, a drifted schema), so the checker sends what a re-listing agent would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


class Unsolved(Exception):
    """No recovery path gets past this step; the text says why."""


@dataclass
class Settled:
    """The step's value, final: no other kind needs to look at this reading."""

    value: Any


class Solver(Protocol):
    """The checker, as a kind's solvability step uses it."""

    needed: list[Any]  # the values of the current step's true result that the rest of the task reads

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Call `tool` (by its original name, with original arguments); (ok, its `tool_called` event)."""
        ...

    async def siblings(self, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """Ask every reachable tool serving the same fact; the events of the calls that answered."""
        ...

    async def settle(self, tool: str, arguments: dict[str, Any], event: dict[str, Any]) -> Any:
        """The value of an ok call, after every kind that touched it had its say."""
        ...

    def truth(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's true result for these arguments."""
        ...

    def wait(self, seconds: float) -> None:
        """Let `seconds` pass on the episode's clock (the checker does not sleep)."""
        ...


@runtime_checkable
class SolvesFailure(Protocol):
    """The capability `solve_failed`: how to get past a call this kind made fail."""

    async def solve_failed(
        self, solver: Solver, tool: str, arguments: dict[str, Any], event: Any
    ) -> Settled | None: ...


@runtime_checkable
class SolvesResult(Protocol):
    """The capability `solve_result`: the value the task should go on with after this kind touched a result."""

    async def solve_result(
        self, solver: Solver, tool: str, arguments: dict[str, Any], event: Any, value: Any
    ) -> Any: ...


@runtime_checkable
class MapsArguments(Protocol):
    """The capability `to_current`: a call rewritten to the interface the kind serves now."""

    def to_current(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...

"""One `tools/call` on its way through an episode (call_path.py): what its trace line needs and what the steps between
hand on to each other, in one record instead of a dozen arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_hazard.hazards import ToolView
    from mcp_hazard.scenario.models import ToolSpec


def _unchanged(text: str) -> str:
    return text


@dataclass(slots=True, eq=False)  # eq=False: a hanging call is found in `Episode.waiting` by identity
class ToolCall:
    name: str
    """The tool as traced: the scenario's name of a tool that resolved, else the name as called."""
    slot: int
    arguments: Any
    """As the agent sent them (a preview when they were too large to keep)."""
    began: float
    """`time.perf_counter()` when the call came in: the trace's duration counts from here."""
    called_as: str = ""
    """The name the hazard engine is told: as called, or the view's name under interventions."""
    spec: ToolSpec | None = None
    view: ToolView | None = None
    inner: Any = None
    """The arguments in the tool's own terms (below the interventions): what the hazards see."""
    below: Any = None
    """`inner` when an intervention mapped the call, traced when it differs from what was sent; else None."""
    touched: Sequence[int] = ()
    """The hazards that acted on the call (a tuple until one does: no list made for the many calls none touches)."""
    handle: Any = None
    """The hazard engine's memory of the call between `before` and `after` (None: no hazard acts on the tool)."""
    served: Callable[[str], str] = _unchanged
    """Puts a message from below into the names the agent knows (call_path.py, `_served_terms`)."""

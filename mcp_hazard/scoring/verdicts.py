"""Recovery verdicts: for each hazard that fired, whether the agent recovered by the kind's recovery path (retry,
fallback, corrected call, re-list, normalise, cross-check, paginate, verify, check the state), and in how many calls.
Each kind holds its own rule (`JudgesRecovery.recovered`, else the default rule of hazards/capabilities.py), found
through the registry; docs/scoring.md states each rule in words with a worked example."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_hazard.hazards.base import REGISTRY, Hazard, kinds_for
from mcp_hazard.hazards.capabilities import recovered
from mcp_hazard.hazards.recovery import Firing
from mcp_hazard.scenario.models import Scenario
from mcp_hazard.scoring.labels import interned
from mcp_hazard.scoring.trace_index import EpisodeCalls


@dataclass(slots=True)
class HazardVerdict:
    hazard: int
    kind: str
    family: str
    tool: str
    slot: int
    failpoint: str
    recovered: bool
    path: str | None
    calls_to_recover: int | None


def firing_of(calls: EpisodeCalls, fired: dict[str, Any], correct: bool) -> Firing:
    """One `hazard_fired` event with the calls after it; the call it fired on is the first call of its tool after
    the event."""
    later = calls.later_calls(fired["seq"])
    own = next((c for c in later if c["tool"] == fired["tool"]), None)
    return Firing(fired, own, [c for c in later if c is not own], correct, calls)


def kind_of(calls: EpisodeCalls, kind: Any) -> type[Hazard] | None:
    """The kind that fired, by its name: the scenario's own kinds (a proxied server's, a suite's), else every kind.
    None for a kind no longer installed, or a damaged name."""
    if not isinstance(kind, str):
        return None
    return _kinds(calls.scenario).get(kind) or REGISTRY.get(kind)


def _kinds(scenario: Scenario) -> Mapping[str, type[Hazard]]:
    """`kinds_for(scenario)`, once per scenario object: it asks every installed kind of the scenario's facts
    provider, and an episode asks it twice per firing."""
    kept = _KINDS.get(id(scenario))
    if kept is not None and kept[0] is scenario:
        return kept[1]
    found = kinds_for(scenario)
    if len(_KINDS) >= 4096:  # bounded: one entry per scenario object scored
        _KINDS.clear()
    _KINDS[id(scenario)] = (scenario, found)  # the entry keeps its scenario alive, so the id cannot be reused
    return found


_KINDS: dict[int, tuple[Scenario, Mapping[str, type[Hazard]]]] = {}


def hazard_verdict(calls: EpisodeCalls, fired: dict[str, Any], correct: bool) -> HazardVerdict:
    """Whether the agent recovered from one firing (`hazard_fired` event), by which path and in how many calls: the
    kind judges (capabilities.py); the calls are counted from the one it fired on (else the firing) up to and
    including the one that recovered."""
    family = fired.get("family", fired["kind"])
    firing = firing_of(calls, fired, correct)
    cls = kind_of(calls, fired["kind"])
    found = recovered(cls, firing) if cls is not None else None
    if found is None:
        return _make(fired, family, False, None, None)
    path, call = found
    if call is None:
        return _make(fired, family, True, path, 0)
    start = firing.own["seq"] if firing.own is not None else fired["seq"]
    taken = sum(1 for c in calls.calls if start < c["seq"] <= call["seq"])
    return _make(fired, family, True, path, taken)


def duplicate_writes(calls: EpisodeCalls, fired_events: list[dict[str, Any]]) -> list[str]:
    """The writes a firing made the agent run twice (a blind retry after a lost reply), by tool name: each kind that
    can tell says so (`duplicated`)."""
    found = []
    for fired in fired_events:
        duplicated = getattr(kind_of(calls, fired.get("kind")), "duplicated", None)
        if duplicated is not None and duplicated(firing_of(calls, fired, False)):
            found.append(str(fired["tool"]))
    return found


def _make(fired: dict[str, Any], family: str, ok: bool, path: str | None, n: int | None) -> HazardVerdict:
    kind, tool, failpoint, slot = fired["kind"], fired["tool"], fired["failpoint"], fired["slot"]
    if not (type(kind) is type(family) is type(tool) is type(failpoint) is str) or type(slot) is not int:
        raise ValueError("a hazard_fired event with a field of the wrong type")  # the report groups by these
    return HazardVerdict(
        hazard=fired["hazard"], kind=interned(kind), family=interned(family), tool=interned(tool), slot=slot,
        failpoint=interned(failpoint), recovered=ok, path=path, calls_to_recover=n,
    )  # fmt: skip

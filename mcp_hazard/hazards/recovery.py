"""What a kind's recovery rule reads of an episode's trace, and the rule most failures share.

Each kind judges its own firings (capabilities.py): the scorer finds the kind by the name in the `hazard_fired`
event and hands it a `Firing`. The rule says by which path the agent recovered and at which call; the scorer counts
the calls it took. The trace is read through `EpisodeView`, which the scorer's index of an episode answers
(scoring/trace_index.py), so a kind needs nothing from the floors above it. docs/scoring.md states each rule in words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

Call = dict[str, Any]
Found = tuple[str, Call | None]  # (recovery path, the call that recovered; None: recovered with no call, 0 calls)

RAN = ("ok", "lost")  # outcomes of a call that ran to completion: a lost reply's call was still carried out
_KEYS = json.JSONEncoder(sort_keys=True, default=str)


class EpisodeView(Protocol):
    """An episode's calls and events, as the scorer indexed them."""

    calls: list[Call]  # every tool call but submit_answer, in order
    by_type: dict[Any, list[Call]]  # every event, by its type

    def stand_ins(self, tool: str) -> frozenset[str]:
        """Tools that serve what the task reads from `tool`'s results."""
        ...

    def siblings(self, tool: str) -> frozenset[str]:
        """Tools that serve a fact `tool` serves, as the scenario declares."""
        ...

    def relisted_between(self, start: int, end: int) -> bool:
        """Whether the agent listed the tools between two events."""
        ...


@dataclass
class Firing:
    """One `hazard_fired` event, with the calls after it."""

    event: Call
    own: Call | None  # the call it fired on: the first call of its tool after the event
    rest: list[Call]  # every later call but `own`
    correct: bool  # whether the episode's answer was right
    episode: EpisodeView

    @property
    def tool(self) -> str:
        return str(self.event["tool"])

    @property
    def change(self) -> dict[str, Any]:
        change = self.event.get("change")
        return change if isinstance(change, dict) else {}

    def ok_calls(self) -> list[Call]:
        return [c for c in self.rest if c["outcome"] == "ok"]


def arguments_of(call: Call) -> Any:
    """A call's arguments in the original interface: as mapped below the interventions when there were any."""
    inner = call.get("inner_arguments")
    return inner if inner is not None else call.get("arguments")


def same_arguments(one: Call, two: Call) -> bool:
    """Whether two calls asked the same (original arguments, key order aside)."""
    return _KEYS.encode(arguments_of(one)) == _KEYS.encode(arguments_of(two))


def retried(firing: Firing, path: str, same_tool: bool = True) -> Found | None:
    """The rule of a failure that comes before the tool runs: nothing to recover when the call it fired on went
    through anyway; else the first ok call of the same tool (`path`, unless `same_tool` is False: a tool that is gone
    for good) or of a tool standing in for it (`fallback`)."""
    own = firing.own
    if own is not None and own["outcome"] == "ok":
        return "none_needed", None
    stand_ins = firing.episode.stand_ins(firing.tool)
    for call in firing.ok_calls():
        if call["tool"] == firing.tool and same_tool:
            return path, call
        if call["tool"] in stand_ins:
            return "fallback", call
    return None

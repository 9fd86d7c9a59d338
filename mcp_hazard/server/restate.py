"""Restatement, FuncBenchGen's mitigation (paper 003, "Mitigation Strategy"): upon each function return, the response
includes not only the output value but a list of all currently known variable values.

A task opts in with `restate_known` (the values its prompt gives). From then on every successful result that is an
object also carries `known_values`: those given values, then every top-level scalar field of the episode's
successful results so far, this one included, in the order first seen and with the latest value. What the agent has
obtained is what is restated, a wrong value it was served included: the point is to relieve its memory, not to
correct it.
"""

from __future__ import annotations

from typing import Any

KNOWN_FIELD = "known_values"


class Restatement:
    def __init__(self, given: dict[str, Any]) -> None:
        self.known: dict[str, Any] = dict(given)

    def restate(self, result: dict[str, Any]) -> dict[str, Any]:
        """`result` with `known_values` added, after learning its own fields."""
        for key, value in result.items():
            if key != KNOWN_FIELD and (value is None or isinstance(value, str | int | float | bool)):
                self.known[key] = value
        return {**result, KNOWN_FIELD: dict(self.known)}

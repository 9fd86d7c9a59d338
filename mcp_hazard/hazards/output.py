"""Output drift: the result keeps the right fact in a drifted form. Recovery: normalise.

Every mode serves text only (no structured content). A tool that declares an output_schema is listed without it
while this hazard targets it, because the SDK client validates structured content against the listed schema and a
drifted object would not match; the listing change is part of the drift.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, ToolFacts, ToolView
from mcp_hazard.hazards.capabilities import JudgesRecovery, Lists, Placement, Presentation
from mcp_hazard.hazards.recovery import Firing, Found
from mcp_hazard.json_text import indented
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Task
from mcp_hazard.stable import choose

OutputMode = Literal["unit_wrapper", "label_value", "explanation", "reordered", "alias", "stale_flag"]
MODES: tuple[OutputMode, ...] = ("unit_wrapper", "label_value", "explanation", "reordered", "alias", "stale_flag")
# Chosen when no mode is given: each changes the form an agent reading the documented JSON expects, so it bites.
# unit_wrapper (bites only numbers) and reordered (bites only order-sensitive reads) are there when asked for.
DEFAULT_MODES: tuple[OutputMode, ...] = ("label_value", "explanation", "alias", "stale_flag")
# On a real server's plain text only the forms that keep text readable apply: a note after it, or a cache envelope.
TEXT_MODES: tuple[OutputMode, ...] = ("explanation", "stale_flag")
STALE_AS_OF = "2025-12-01"
UNIT_SUFFIXES = {
    "_eur": "EUR", "_usd": "USD", "_gbp": "GBP", "_cents": "cents", "_kg": "kg", "_km": "km", "_m3": "m³",
    "_c": "°C", "_pct": "%", "_minutes": "min", "_hours": "h", "_days": "days",
}  # fmt: skip
EXPLANATION = (
    "Note: figures above come from the operational data store and are provided for information. "
    "Values are rounded as displayed by the source system; contact support for certified statements."
)


class OutputParams(HazardParams):
    mode: OutputMode | None = None


def _unit(key: str) -> str | None:
    return next((unit for suffix, unit in UNIT_SUFFIXES.items() if key.endswith(suffix)), None)


def wrap_units(value: Any, key: str = "") -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        unit = _unit(key)
        return f"{value} {unit}" if unit else str(value)
    if isinstance(value, list):
        return [wrap_units(item, key) for item in value]
    if isinstance(value, dict):
        return {k: wrap_units(v, k) for k, v in value.items()}
    return value


def label_lines(value: Any, prefix: str = "") -> list[str]:
    if isinstance(value, dict):
        lines: list[str] = []
        for key, item in value.items():
            lines.extend(label_lines(item, f"{prefix}{key}" if not prefix else f"{prefix} / {key}"))
        return lines
    if isinstance(value, list):
        lines = []
        for index, item in enumerate(value, start=1):
            lines.extend(label_lines(item, f"{prefix} #{index}"))
        return lines or [f"{prefix}: (none)"]
    shown = "yes" if value is True else "no" if value is False else "-" if value is None else value
    return [f"{prefix.replace('_', ' ').title()}: {shown}"]


def alias_keys(value: Any) -> Any:
    """Field names replaced by display labels: `price_eur` -> `Price (EUR)`, `flight_id` -> `Flight Id`."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            unit = _unit(key)
            base = key[: key.rfind("_")] if unit else key
            label = base.replace("_", " ").strip().title() + (f" ({unit})" if unit else "")
            out[label] = alias_keys(item)
        return out
    if isinstance(value, list):
        return [alias_keys(item) for item in value]
    return value


def reorder(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: reorder(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reorder(item) for item in reversed(value)]
    return value


class OutputDrift(Placement, Lists, Presentation, JudgesRecovery, Hazard):
    kind = "output_drift"
    family = "output_drift"
    recovery = ("normalise",)
    summary = (
        "Results keep the right fact in another form: units in text, label/value lines, prose, reordering, aliased "
        "field names, or a stale flag from a cache."
    )
    failpoints = ("listing", "after")
    Params = OutputParams

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        return facts.read_problem(task, tool)  # a change of form matters only to a reader

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """The value is still there in another form: the right answer is the proof it was read."""
        return ("normalise", None) if firing.correct else None

    def mode_for(self, tool: str, seed: int, result: Any = None) -> OutputMode:
        """The declared mode, else one drawn from the seed; drawn again among those that fit where the facts say the
        drawn one would not change `result`'s form as it means to."""
        declared = self.params.mode  # type: ignore[attr-defined]
        mode: OutputMode = declared or choose(DEFAULT_MODES, seed, self.scenario.id, self.task.id, tool, self.salt)
        if declared is not None or self.facts.form_fits(mode, result):
            return mode
        fitting = tuple(m for m in DEFAULT_MODES if self.facts.form_fits(m, result))
        return choose(fitting, seed, self.scenario.id, self.task.id, tool, self.salt, "fits") if fitting else mode

    def _text(self, call: CallContext, text: str) -> Effect:
        """A real server's plain text, in a form that keeps it readable."""
        declared = self.params.mode  # type: ignore[attr-defined]
        mode = declared if declared in TEXT_MODES else choose(
            TEXT_MODES, call.seed, self.scenario.id, self.task.id, call.tool.name, self.salt
        )  # fmt: skip
        if mode == "explanation":
            served = text.rstrip() + "\n\n" + EXPLANATION
        else:
            cache = {"stale": True, "as_of": STALE_AS_OF, "note": "served from cache"}
            served = indented({"data": text, "cache": cache})
        return Effect(
            change={"mode": mode},
            text=served,
            hint="The result's format differs from the tool's documentation; extract the values you need.",
        )

    def listing_state(self) -> object:
        return None  # the listing never changes: no output schema, from the start

    def view(self, view: ToolView) -> ToolView:
        view.output_schema = None
        return view

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not fire or not outcome.ok:
            return None
        result = outcome.result
        form = self.facts.result_form(result)
        if form != "json":
            return self._text(call, str(result)) if form == "text" else None
        mode = self.mode_for(call.tool.name, call.seed, result)
        if mode == "unit_wrapper":
            text = indented(wrap_units(result))
        elif mode == "label_value":
            text = "\n".join(label_lines(result)) if isinstance(result, dict | list) else str(result)
        elif mode == "explanation":
            text = indented(result) + "\n\n" + EXPLANATION
        elif mode == "alias":
            text = indented(alias_keys(result))
        elif mode == "stale_flag":
            flagged = {"data": result, "cache": {"stale": True, "as_of": STALE_AS_OF, "note": "served from cache"}}
            text = indented(flagged)
        else:
            text = indented(reorder(result))
        return Effect(
            change={"mode": mode},
            text=text,
            hint="The result's format differs from the tool's documentation; extract the values you need from it.",
        )

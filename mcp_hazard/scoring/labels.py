"""How scores name things: a condition as the CLI would write it (`kind:key=value,...`, joined with `+`), the
interventions in the order applied, and every such name shared as one string object across a run's scores."""

from __future__ import annotations

import json
from functools import lru_cache
from sys import intern
from typing import Any

from mcp_hazard.json_parse import loads

# One encoder, built once: `json.dumps` with options builds a new JSONEncoder on every call.
_LABEL_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def interned(value: Any) -> Any:
    """A name from a small vocabulary (agent, profile, condition, hazard kind, tool, ...) as one shared string object.

    Scores keep these names for the whole run. Shared, they cost no memory per score, and grouping them (aggregate)
    or a garbage collection that traverses the scores reads the same few objects from cache instead of a scattered
    copy per score. Anything but exact text is returned as it is."""
    return intern(value) if type(value) is str else value


def condition_label(kinds: list[str]) -> str:
    return "+".join(sorted(set(kinds))) if kinds else "clean"


def intervention_label(interventions: Any) -> str:
    """Interventions joined with `+` in the order applied (the order changes what is served), or `none`."""
    names = [str(i) for i in interventions] if isinstance(interventions, list) else []
    return "+".join(names) or "none"


def _cli_value(key: str, value: Any) -> str:
    """A hazard option value as `--hazard` would take it: `slots` as `1+3`, a string as typed (quoted only when the
    CLI would otherwise read it as another JSON value), anything else as compact JSON."""
    if key == "slots" and isinstance(value, list):
        return "+".join(_cli_value("", item) for item in value)
    if isinstance(value, str):
        return _cli_string(value)
    return _LABEL_ENCODER.encode(value)


@lru_cache(maxsize=1024)
def _cli_string(value: str) -> str:
    try:
        loads(value)
    except ValueError:
        return value
    return _LABEL_ENCODER.encode(value)


def hazard_label(spec: Any) -> str:
    """One hazard spec of a condition in the CLI syntax `kind:key=value,...`: its kind, then the parameters and
    schedule keys it was given (not the kind's defaults), keys sorted. The tools it targets are left out."""
    if not isinstance(spec, dict):
        return str(spec)  # an unexpanded shorthand such as `declared`
    options: list[tuple[str, Any]] = []
    for group in (spec.get("params"), spec.get("schedule")):
        if isinstance(group, dict):
            options.extend(group.items())
    kind = str(spec.get("kind", "?"))
    if not options:
        return kind
    options.sort(key=lambda option: str(option[0]))
    return kind + ":" + ",".join(f"{key}={_cli_value(str(key), value)}" for key, value in options)


def condition_name(condition: dict[str, Any], kinds: list[str]) -> str:
    """The canonical condition label: each distinct hazard spec of `condition.hazards` as `hazard_label` renders it,
    sorted and joined with `+`; `clean` when there is none. A condition without a `hazards` list (not written by
    mcp-hazard) falls back to the kinds of the episode's hazards."""
    specs = condition.get("hazards")
    if not isinstance(specs, list):
        return condition_label(kinds)
    if len(specs) == 1:
        return hazard_label(specs[0])
    return "+".join(sorted({hazard_label(spec) for spec in specs})) if specs else "clean"

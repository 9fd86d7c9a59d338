"""The identity of a suite of tasks: a name, a version and a content hash, recorded in every report.

The hash is a sha256 over canonical content, so it changes when and only when what an agent is asked and judged on
changes: each scenario as its model reads it (JSON with sorted keys: YAML layout, comments and key order do not
count; the `description` note and the `suite` tag itself do not count either), and the tasks that ran, by id. Two
reports with different hashes measured different things, and `score` says so when it reads several runs.

Name and version come from the scenarios' `suite:` tag (`{name, version}`) when every scenario carries the same one;
a run of untagged scenarios is `custom`, one that mixes tags is `mixed`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from mcp_hazard.scenario.models import Scenario

_memo: dict[int, tuple[Scenario, str]] = {}


def scenario_hash(scenario: Scenario) -> str:
    """sha256 of the scenario's canonical content (module docstring)."""
    known = _memo.get(id(scenario))
    if known is not None and known[0] is scenario:
        return known[1]
    data = scenario.model_dump(mode="json", by_alias=True, exclude={"description", "suite"})
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    _memo[id(scenario)] = (scenario, digest)
    return digest


def suite_hash(parts: Iterable[tuple[str, str, str]]) -> str:
    """sha256 over sorted `(scenario id, scenario hash, task id)` lines: the tasks that ran and what they ran on."""
    lines = sorted({"\t".join(part) for part in parts})
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def suite_identity(
    scenarios: dict[str, Scenario],
    tasks: Iterable[tuple[str, str]],
    parts: Iterable[tuple[str, str, str]] | None = None,
) -> dict[str, Any]:
    """`{name, version, hash, scenarios, tasks}` of the tasks `(scenario id, task id)` that ran, from their scenarios
    (tasks whose scenario is not known are left out of the hash). `parts`, when given, are the `(scenario id,
    scenario hash, task id)` of each episode as scored, which stay right when one id was read in two versions."""
    pairs = sorted({(s, t) for s, t in tasks if s in scenarios})
    used = {s for s, _ in pairs}
    tags = {(m.suite.name, m.suite.version) if m.suite else None for i, m in scenarios.items() if i in used}
    if len(tags) == 1 and None not in tags:
        name, version = next(iter(tags))  # type: ignore[misc]
    else:
        name, version = ("custom" if tags <= {None} else "mixed"), None
    found = sorted(set(parts)) if parts is not None else [(s, scenario_hash(scenarios[s]), t) for s, t in pairs]
    return {"name": name, "version": version, "hash": suite_hash(found), "scenarios": len(used), "tasks": len(pairs)}


def describe(suite: dict[str, Any] | None) -> str:
    """One line for people: `mcp-hazard-suite 1.0 (266 tasks in 15 scenarios, sha256 3f2a9c1e0b7d)`."""
    if not suite:
        return "unknown suite"
    label = f"{suite['name']} {suite['version']}" if suite.get("version") else str(suite["name"])
    tasks, scenarios = suite["tasks"], suite["scenarios"]
    counts = f"{tasks} task{'' if tasks == 1 else 's'} in {scenarios} scenario{'' if scenarios == 1 else 's'}"
    return f"{label} ({counts}, sha256 {str(suite['hash'])[:12]})"

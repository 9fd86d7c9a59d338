"""Score one episode from its trace: the answer, recovery from each injected hazard, premature completion, a
taxonomy of failed calls, and efficiency. docs/scoring.md states every rule in words with a worked example."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from mcp_hazard.hazards.base import siblings
from mcp_hazard.scenario.answers import answer_matches, canonical_text, parse_number
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scoring.rules import GAVE_UP_PHRASES
from mcp_hazard.trace.reader import Trace

BEFORE_PATHS = {
    "transient_error": "retry",
    "latency": "retry",
    "permanent_error": "fallback",
    "invocation_error": "corrected_call",
    "spec_drift": "relist",
}


@dataclass
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


@dataclass
class CallFailure:
    seq: int
    tool: str
    slot: int
    failure: str
    error: str | None


@dataclass
class EpisodeScore:
    trace: str
    episode_id: str
    agent: str
    scenario: str
    task: str
    workflow: str
    golden_length: int
    seed: int
    profile: str
    hazard_kinds: list[str]
    condition: str
    intervention: str
    answered: bool
    answer: Any
    correct: bool
    episode_failure: str | None
    premature: bool
    premature_reasons: list[str]
    verdicts: list[HazardVerdict]
    failures: list[CallFailure]
    calls: int
    redundant_calls: int
    ended: str | None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def condition_label(kinds: list[str]) -> str:
    return "+".join(sorted(set(kinds))) if kinds else "clean"


# One encoder each, built once: `json.dumps` with options builds a new JSONEncoder on every call.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=str)
_TEXT_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
_LABEL_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def _cli_value(key: str, value: Any) -> str:
    """A hazard option value as `--hazard` would take it: `slots` as `1+3`, a string as typed (quoted only when the
    CLI would otherwise read it as another JSON value), anything else as compact JSON."""
    if key == "slots" and isinstance(value, list):
        return "+".join(_cli_value("", item) for item in value)
    if isinstance(value, str):
        try:
            json.loads(value)
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
    return "+".join(sorted({hazard_label(spec) for spec in specs})) if specs else "clean"


def _key(event: dict[str, Any]) -> str:
    return f"{event.get('tool')}|{_KEY_ENCODER.encode(event.get('arguments'))}"


@lru_cache(maxsize=1 << 16)
def _token_number(token: str) -> float | None:
    """`parse_number` of one token of known text; tokens repeat heavily across episodes."""
    return parse_number(token)


def _by_type(events: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for event in events:
        kind = event.get("type")
        group = groups.get(kind)
        if group is None:
            groups[kind] = [event]
        else:
            group.append(event)
    return groups


class _Scorer:
    def __init__(
        self, trace: Trace, scenario: Scenario, task: Task, by_type: dict[Any, list[dict[str, Any]]] | None = None
    ) -> None:
        self.trace = trace
        self.scenario = scenario
        self.task = task
        self.by_type = by_type if by_type is not None else _by_type(trace.events)
        self.calls = [e for e in self.by_type.get("tool_called", ()) if e.get("tool") != "submit_answer"]
        self.events = trace.events
        self._keys: dict[int, str] = {}  # id(call) -> _key(call)
        self._siblings: dict[str, set[str]] = {}
        self._known: dict[int, str] = {}  # number of leading calls -> known text
        self._results: dict[int, str] = {}  # index in self.calls -> JSON of the result

    def key(self, call: dict[str, Any]) -> str:
        found = self._keys.get(id(call))
        if found is None:
            found = self._keys[id(call)] = _key(call)
        return found

    def siblings(self, tool: str) -> set[str]:
        found = self._siblings.get(tool)
        if found is None:
            found = self._siblings[tool] = set(siblings(self.scenario, tool))
        return found

    def later_calls(self, seq: int) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["seq"] > seq]

    def relisted_between(self, start: int, end: int) -> bool:
        return any(start < e["seq"] < end for e in self.by_type.get("tools_listed", ()))

    def verdict(self, fired: dict[str, Any], correct: bool) -> HazardVerdict:
        kind, tool, seq = fired["kind"], fired["tool"], fired["seq"]
        family = fired.get("family", kind)
        later = self.later_calls(seq)
        # The call the hazard fired on is the first call of `tool` after the firing event.
        own = next((c for c in later if c["tool"] == tool), None)
        rest = [c for c in later if c is not own]
        sibs = self.siblings(tool)
        found: tuple[str, dict[str, Any]] | None = None
        if kind in BEFORE_PATHS:
            if own is not None and own["outcome"] == "ok":
                return self._make(fired, family, True, "none_needed", 0)
            for call in rest:
                if call["outcome"] != "ok":
                    continue
                if call["tool"] == tool:
                    path = BEFORE_PATHS[kind]
                    if kind == "spec_drift" and not self.relisted_between(seq, call["seq"]):
                        path = "corrected_call"
                    if kind == "permanent_error":
                        continue  # the same tool cannot recover a permanent failure
                    found = (path, call)
                    break
                if call["tool"] in sibs:
                    found = ("fallback", call)
                    break
        elif kind == "conflict":
            found = next((("cross_check", c) for c in rest if c["tool"] in sibs and c["outcome"] == "ok"), None)
        elif kind == "pagination":
            found = next(
                (("paginate", c) for c in rest if c["tool"] == tool and c["outcome"] == "ok"
                 and isinstance(c.get("arguments"), dict) and _page(c["arguments"]) >= 2),
                None,
            )  # fmt: skip
        elif kind == "silent_wrong_value":
            found = next(
                (("verify", c) for c in rest if c["outcome"] == "ok" and (c["tool"] in sibs or (
                    c["tool"] == tool and self.key(c) != (self.key(own) if own else "")))),
                None,
            )  # fmt: skip
        elif kind == "output_drift":
            return self._make(fired, family, correct, "normalise" if correct else None, 0 if correct else None)
        if found is None:
            return self._make(fired, family, False, None, None)
        path, call = found
        start = own["seq"] if own is not None else seq
        taken = sum(1 for c in self.calls if start < c["seq"] <= call["seq"])
        return self._make(fired, family, True, path, taken)

    @staticmethod
    def _make(fired: dict[str, Any], family: str, ok: bool, path: str | None, n: int | None) -> HazardVerdict:
        return HazardVerdict(
            hazard=fired["hazard"], kind=fired["kind"], family=family, tool=fired["tool"], slot=fired["slot"],
            failpoint=fired["failpoint"], recovered=ok, path=path, calls_to_recover=n,
        )  # fmt: skip

    def known_text(self, before_seq: int) -> str:
        """The task prompt and every successful call's result before `before_seq`, as canonical casefolded text.
        Built once per prefix of calls."""
        count = 0
        for call in self.calls:
            if call["seq"] >= before_seq:
                break
            count += 1
        text = self._known.get(count)
        if text is None:
            parts = [self.task.prompt]
            for index, call in enumerate(self.calls[:count]):
                if call["outcome"] == "ok":
                    result = self._results.get(index)
                    if result is None:
                        result = self._results[index] = _TEXT_ENCODER.encode(call.get("result"))
                    parts.append(result)
                    if call.get("text"):
                        parts.append(str(call["text"]))
            text = self._known[count] = canonical_text(" ".join(parts)).casefold()
        return text

    def failure(self, call: dict[str, Any]) -> str:
        outcome = call["outcome"]
        if outcome == "unknown_tool":
            return "non_existent_tool"
        if outcome == "invalid_arguments":
            return "schema_violation"
        if outcome in ("rejected", "cancelled"):
            return "injected"
        if outcome == "fault":
            return "server_fault"
        known = self.known_text(call["seq"])
        for value in _scalars(call.get("arguments")):
            text = canonical_text(value).casefold()
            if text and text not in known:
                return "unknown_value"
        return "incorrect_known_value"

    def steps_missing(self) -> list[str]:
        missing = []
        for step in self.task.golden_path.steps:
            accepted = {step.tool, *self.siblings(step.tool)}
            if not any(c["tool"] in accepted and c["outcome"] == "ok" for c in self.calls):
                missing.append(step.tool)
        return sorted(set(missing))

    def supported(self, answer: Any) -> bool:
        known = self.known_text(10**12)
        text = canonical_text(answer).casefold()
        if text and text in known:
            return True
        number = parse_number(answer)
        if number is None:
            return False
        tokens = known.replace(",", " ").replace(":", " ").split()
        return any(n is not None and abs(n - number) < 1e-6 for n in map(_token_number, tokens))


def _page(arguments: dict[str, Any]) -> int:
    page = arguments.get("page", 1)
    return page if isinstance(page, int) and not isinstance(page, bool) else 1


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _scalars(item)]
    if isinstance(value, list):
        return [s for item in value for s in _scalars(item)]
    if value is None or isinstance(value, bool):
        return []
    return [value]


def score_episode(trace: Trace, scenario: Scenario) -> EpisodeScore:
    """Score one trace against its scenario. The trace must have an episode_started event."""
    by_type = _by_type(trace.events)
    started = by_type["episode_started"][0] if "episode_started" in by_type else None
    if started is None:
        raise ValueError(f"{trace.path}: no episode_started event")
    task = scenario.task(started["task"])
    if task is None:
        raise ValueError(f"{trace.path}: scenario {scenario.id!r} has no task {started['task']!r}")
    scorer = _Scorer(trace, scenario, task, by_type)
    condition = started.get("condition", {})
    submitted = by_type.get("answer_submitted", [])
    answer = submitted[0]["answer"] if submitted else None
    correct = answer_matches(task.answer, answer) if submitted else False
    verdicts = [scorer.verdict(e, correct) for e in by_type.get("hazard_fired", [])]
    failures = [
        CallFailure(seq=c["seq"], tool=c["tool"], slot=c["slot"], failure=scorer.failure(c), error=c.get("error"))
        for c in scorer.calls
        if c["outcome"] != "ok"
    ]
    reasons: list[str] = []
    if submitted:
        missing = scorer.steps_missing()
        if missing:
            reasons.append("no successful call of " + ", ".join(missing))
        unresolved = [v.tool for v in verdicts if v.kind == "conflict" and not v.recovered]
        if unresolved:
            reasons.append("conflict not cross-checked: " + ", ".join(sorted(set(unresolved))))
    if not submitted:
        episode_failure: str | None = "no_answer"
    elif correct:
        episode_failure = None
    elif not canonical_text(answer) or canonical_text(answer).casefold().strip(". ") in GAVE_UP_PHRASES:
        episode_failure = "gave_up"
    elif not scorer.supported(answer):
        episode_failure = "invented"
    else:
        episode_failure = "wrong_answer"
    ok_keys = [scorer.key(c) for c in scorer.calls if c["outcome"] == "ok"]
    ended = by_type.get("episode_ended", [])
    run = started.get("run", {})
    kinds = [h.get("kind", "?") for h in started.get("hazards", [])]
    warnings = list(trace.warnings)
    if not ended:
        warnings.append(f"{trace.path}: no episode_ended event (the server stopped mid-episode)")
    return EpisodeScore(
        trace=trace.path,
        episode_id=str(run.get("episode_id", "")),
        agent=str(run.get("agent") or "unknown"),
        scenario=scenario.id,
        task=task.id,
        workflow=task.workflow,
        golden_length=len(task.golden_path.steps),
        seed=int(condition.get("seed", 0)),
        profile=str(condition.get("profile", "strict")),
        hazard_kinds=kinds,
        condition=condition_name(condition, kinds),
        intervention=condition_label([str(i) for i in condition.get("interventions", [])]).replace("clean", "none"),
        answered=bool(submitted),
        answer=answer,
        correct=correct,
        episode_failure=episode_failure,
        premature=bool(reasons),
        premature_reasons=reasons,
        verdicts=verdicts,
        failures=failures,
        calls=len(scorer.calls),
        redundant_calls=len(ok_keys) - len(set(ok_keys)),
        ended=ended[0].get("reason") if ended else None,
        warnings=warnings,
    )

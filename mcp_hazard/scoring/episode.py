"""Score one episode from its trace: the answer, recovery from each injected hazard, premature completion, a
taxonomy of failed calls, and efficiency. docs/scoring.md states every rule in words with a worked example."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from sys import intern
from typing import Any

from mcp_hazard.hazards.base import siblings
from mcp_hazard.scenario.answer_extract import kind_of
from mcp_hazard.scenario.answers import (
    AnswerVerdict,
    answer_fields,
    answer_vocabulary,
    canonical_text,
    field_values,
    judge_answer,
    parse_number,
)
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scoring.rules import AGENT_STOPS
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
    seq: int | None  # None: the call never reached the server (a malformed call the agent recorded)
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
    # How the agent's run ended (the trace's agent_ended event): finished, agent_crashed, endpoint_error, timeout;
    # "unknown" for a trace without one (an episode served to a client that `run` did not drive).
    agent_outcome: str = "unknown"
    answer_rule: str = ""  # which answer rule decided `correct`, in words (docs/scoring.md)
    judged: bool = True  # False: the task has no expected answer (a proxied server's), so `correct` means nothing
    duration_s: float | None = None  # first to last trace timestamp; set by scoring.collect (volatile)
    warnings: list[str] = field(default_factory=list)
    # Research quantities (docs/scoring.md, "Research quantities"): the dependency depth of the golden path; the
    # trajectory match (CIB) and its rule; FuncBenchGen's class of each classified call of a failed episode; the
    # agent's label and the repeat index (from `agent_ended`); the name policy of the surface and the problem that
    # pairs name policies; submissions the guarded harness refused.
    depth: int = 0
    trajectory_match: bool | None = None
    trajectory_rule: str | None = None
    call_classes: list[str] = field(default_factory=list)
    agent_label: str | None = None
    repeat: int | None = None
    name_policy: str = "original"
    problem: str = ""
    refused_answers: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def condition_label(kinds: list[str]) -> str:
    return "+".join(sorted(set(kinds))) if kinds else "clean"


def intervention_label(interventions: Any) -> str:
    """Interventions joined with `+` in the order applied (the order changes what is served), or `none`."""
    names = [str(i) for i in interventions] if isinstance(interventions, list) else []
    return "+".join(names) or "none"


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
        return _cli_string(value)
    return _LABEL_ENCODER.encode(value)


@lru_cache(maxsize=1024)
def _cli_string(value: str) -> str:
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
    if len(specs) == 1:
        return hazard_label(specs[0])
    return "+".join(sorted({hazard_label(spec) for spec in specs})) if specs else "clean"


def _key(event: dict[str, Any]) -> str:
    return f"{event.get('tool')}|{_KEY_ENCODER.encode(event.get('arguments'))}"


def _label(value: Any) -> Any:
    """A name from a small vocabulary (agent, profile, condition, hazard kind, tool, ...) as one shared string object.

    Scores keep these names for the whole run. Shared, they cost no memory per score, and grouping them (aggregate)
    or a garbage collection that traverses the scores reads the same few objects from cache instead of a scattered
    copy per score. Anything but exact text is returned as it is."""
    return intern(value) if type(value) is str else value


@lru_cache(maxsize=1 << 16)
def _token_number(token: str) -> float | None:
    """`parse_number` of one token of known text; tokens repeat heavily across episodes."""
    return parse_number(token)


@lru_cache(maxsize=64)
def _known_numbers(known: str) -> frozenset[float]:
    """The numbers among the tokens of a known text; episodes of one task often see the very same text."""
    tokens = known.replace(",", " ").replace(":", " ").split()
    return frozenset(n for n in map(_token_number, tokens) if n is not None)


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
        try:
            found = self._siblings.get(tool)
        except TypeError:  # an unhashable tool name in a damaged trace: no siblings, as siblings() says
            return set(siblings(self.scenario, tool))
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
        if kind in BEFORE_PATHS and own is not None and own["outcome"] == "ok":
            return self._make(fired, family, True, "none_needed", 0)
        if kind == "output_drift":
            return self._make(fired, family, correct, "normalise" if correct else None, 0 if correct else None)
        rest = [c for c in later if c is not own]
        sibs = self.siblings(tool)
        found: tuple[str, dict[str, Any]] | None = None
        if kind in BEFORE_PATHS:
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
            change = fired.get("change") or {}
            page, total = change.get("page", 1), change.get("total_pages", 0)
            if isinstance(page, int) and isinstance(total, int) and total and page >= total:
                return self._make(fired, family, True, "paginate", 0)  # the last page: nothing more to fetch
            after = page if isinstance(page, int) else 1
            found = next(
                (("paginate", c) for c in rest if c["tool"] == tool and c["outcome"] == "ok"
                 and isinstance(_original(c), dict) and _page(_original(c)) > after),
                None,
            )  # fmt: skip
        elif kind == "silent_wrong_value":
            answered = self.by_type.get("answer_submitted")
            if correct and answered:
                found = _right_value_read(fired, own, [c for c in rest if c["seq"] < answered[0]["seq"]], sibs)
        if found is None:
            return self._make(fired, family, False, None, None)
        path, call = found
        start = own["seq"] if own is not None else seq
        taken = sum(1 for c in self.calls if start < c["seq"] <= call["seq"])
        return self._make(fired, family, True, path, taken)

    @staticmethod
    def _make(fired: dict[str, Any], family: str, ok: bool, path: str | None, n: int | None) -> HazardVerdict:
        return HazardVerdict(
            hazard=fired["hazard"], kind=_label(fired["kind"]), family=_label(family), tool=_label(fired["tool"]),
            slot=fired["slot"], failpoint=_label(fired["failpoint"]), recovered=ok, path=path, calls_to_recover=n,
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
        if outcome == "upstream_error":
            return "upstream_failure"  # a proxied server failed at the protocol level: not the agent's doing
        known = self.known_text(call["seq"])
        for value in _scalars(call.get("arguments")):
            text = canonical_text(value).casefold()
            if text and text not in known:
                return "unknown_value"
        return "incorrect_known_value"

    def steps_missing(self) -> list[str]:
        try:
            done = {c["tool"] for c in self.calls if c["outcome"] == "ok"}
        except (KeyError, TypeError):  # a damaged trace (a call without a tool, or an odd one): look call by call
            done = None
        missing = []
        for step in self.task.golden_path.steps:
            accepted = {step.tool, *self.siblings(step.tool)}
            if done is not None:
                if accepted.isdisjoint(done):
                    missing.append(step.tool)
            elif not any(c["tool"] in accepted and c["outcome"] == "ok" for c in self.calls):
                missing.append(step.tool)
        return sorted(set(missing))

    def judge(self, answer: Any) -> AnswerVerdict:
        """The answer under docs/scoring.md "Final answers": the scenario's vocabulary plus what this episode's
        results held under the answer's fields (a drifted or silently wrong value is a value the agent could name)."""
        found = set(answer_vocabulary(self.scenario, self.task))
        fields = answer_fields(self.task)
        if fields:
            for call in self.calls:
                if call["outcome"] == "ok":
                    field_values(call.get("result"), fields, found)
        return judge_answer(self.task.answer, answer, prompt=self.task.prompt, vocabulary=frozenset(found))

    def supported(self, answer: Any) -> bool:
        known = self.known_text(10**12)
        text = canonical_text(answer).casefold()
        if text and text in known:
            return True
        number = parse_number(answer)
        if number is None:
            return False
        return any(abs(n - number) < 1e-6 for n in _known_numbers(known))


_PLAIN_TYPES = (str, int, bool, type(None))


def _plain_arguments(arguments: Any) -> tuple[tuple[str, type, Any], ...] | None:
    """Flat arguments as a tuple that is equal for two calls exactly when their sorted-key JSON is equal: each name
    with the type and value (a float by its repr: 1 == 1.0 == True and 0.0 == -0.0 in Python, not in JSON). None for
    anything else (nested values, names that are not text), which is then compared as JSON."""
    if type(arguments) is not dict:
        return None
    items = []
    for name, value in arguments.items():
        kind = type(value)
        if type(name) is not str:
            return None
        if kind is float:
            value = repr(value)
        elif kind not in _PLAIN_TYPES:
            return None
        items.append((name, kind, value))
    items.sort()  # by name: names in a dict are distinct, so types and values are never compared
    return tuple(items)


def _redundant(ok_calls: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> int:
    """Successful calls that repeat an earlier one: same tool, same arguments (compared as sorted-key JSON, `key`).
    When every tool name is text without `|` (so keys of different tools differ) and every call's arguments are
    flat, `_plain_arguments` stands in for the JSON, which is slower to build."""
    if len(ok_calls) < 2:
        return 0
    tools = [c.get("tool") for c in ok_calls]
    if all(type(t) is str and "|" not in t for t in tools):
        if len(set(tools)) == len(tools):
            return 0
        plain = [_plain_arguments(c.get("arguments")) for c in ok_calls]
        if None not in plain:
            return len(plain) - len(set(zip(tools, plain, strict=True)))
    keys = [key(c) for c in ok_calls]
    return len(keys) - len(set(keys))


def _original(call: dict[str, Any]) -> Any:
    """A call's arguments in the original interface: as mapped below the interventions when there were any."""
    inner = call.get("inner_arguments")
    return inner if inner is not None else call.get("arguments")


def _right_value_read(
    fired: dict[str, Any], own: dict[str, Any] | None, rest: list[dict[str, Any]], sibs: set[str]
) -> tuple[str, dict[str, Any]] | None:
    """The first call that read a silent wrong value's right value (`change.original`): an ok repeat of the affected
    call (same original arguments; the value at `change.path`) -> `verify`, or an ok call of a sibling whose result
    holds it (text case-blind, numbers up to a 10^k unit scale) -> `cross_check`. None when no call did."""
    from mcp_hazard.hazards.facts import supplies
    from mcp_hazard.hazards.silent import resolve, same_value

    change = fired.get("change") or {}
    if "original" not in change:
        return None  # a trace from before this rule, or damaged: nothing says what the right value was
    right, path = change["original"], change.get("path")
    asked = _KEY_ENCODER.encode(_original(own)) if own is not None else None
    for call in rest:
        if call["outcome"] != "ok":
            continue
        if call["tool"] == fired["tool"]:
            if asked is None or _KEY_ENCODER.encode(_original(call)) != asked:
                continue  # the same tool asked about something else says nothing about this value
            found, value = resolve(call.get("result"), path) if isinstance(path, list) else (False, None)
            if same_value(value, right) if found else supplies([right], call.get("result")):
                return "verify", call
        elif call["tool"] in sibs and supplies([right], call.get("result")):
            return "cross_check", call
    return None


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


def _text_kinds(task: Task) -> bool:
    """Whether the task expects text or an identifier, whose invented values have no shape to be found by."""
    values = task.answer.value if task.answer.match in ("one_of", "unordered_list") else [task.answer.value]
    return any(kind_of(v) in ("text", "identifier", None) for v in values)


@lru_cache(maxsize=1)
def _placeholders() -> frozenset[str]:
    from mcp_hazard.server.episode import SUBMIT_DESCRIPTION, SUBMIT_SCHEMA

    texts = [SUBMIT_DESCRIPTION, SUBMIT_SCHEMA["properties"]["answer"]["description"]]
    return frozenset(canonical_text(text).casefold().strip(" .") for text in texts)


def _placeholder(answer: Any) -> bool:
    """An answer that repeats the `submit_answer` tool's own description (small models copy it): it names no value,
    so it is a wrong answer, never an invented one."""
    return isinstance(answer, str) and canonical_text(answer).casefold().strip(" .") in _placeholders()


def _malformed_calls(agent_ended: dict[str, Any]) -> list[CallFailure]:
    """Tool calls the model wrote that never reached the server (arguments that are not a JSON object), from the
    agent's own record: they are failed calls too."""
    events = agent_ended.get("events")
    out = []
    for event in events if isinstance(events, list) else []:
        if isinstance(event, dict) and event.get("kind") == "malformed_call":
            out.append(CallFailure(
                seq=None, tool=_label(str(event.get("tool") or "")), slot=0,
                failure="malformed_call", error=str(event.get("detail") or "") or None,
            ))  # fmt: skip
    return out


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
    has_answer = task.answer is not None
    judged = scorer.judge(answer) if submitted and has_answer else None
    correct = judged.correct if judged is not None else False
    verdicts = [scorer.verdict(e, correct) for e in by_type.get("hazard_fired", [])]
    failures = [
        CallFailure(
            seq=c["seq"], tool=_label(c["tool"]), slot=c["slot"], failure=scorer.failure(c), error=c.get("error")
        )
        for c in scorer.calls
        if c["outcome"] != "ok"
    ]
    agent_ended = by_type.get("agent_ended", [])
    outcome = str(agent_ended[-1].get("outcome", "unknown")) if agent_ended else "unknown"
    research = _research(scorer, scenario, task, condition, correct, agent_ended[-1] if agent_ended else {})
    failures += _malformed_calls(agent_ended[-1] if agent_ended else {})
    reasons: list[str] = []
    if submitted:
        missing = scorer.steps_missing()
        if missing:
            reasons.append("no successful call of " + ", ".join(missing))
        unresolved = [v.tool for v in verdicts if v.kind == "conflict" and not v.recovered]
        if unresolved:
            reasons.append("conflict not cross-checked: " + ", ".join(sorted(set(unresolved))))
    if not has_answer:
        episode_failure: str | None = outcome if outcome in AGENT_STOPS else None
    elif not submitted:
        episode_failure = outcome if outcome in AGENT_STOPS else "no_answer"
    elif judged is None or judged.correct:
        episode_failure = None
    elif judged.gave_up:
        episode_failure = "gave_up"
    elif judged.rule == "no_candidate" and not _text_kinds(task):
        episode_failure = "wrong_answer"  # no number, date or time at all: nothing was invented
    elif _placeholder(answer):
        episode_failure = "wrong_answer"  # the submit tool's own words, copied: nothing was invented
    elif not any(
        scorer.supported(v) for v in judged.named or [answer if judged.extracted is None else judged.extracted]
    ):
        episode_failure = "invented"
    else:
        episode_failure = "wrong_answer"
    redundant = _redundant([c for c in scorer.calls if c["outcome"] == "ok"], scorer.key)
    ended = by_type.get("episode_ended", [])
    run = started.get("run", {})
    kinds = [_label(h.get("kind", "?")) for h in started.get("hazards", [])]
    warnings = list(trace.warnings)
    if not ended:
        warnings.append(f"{trace.path}: no episode_ended event (the server stopped mid-episode)")
    return EpisodeScore(
        trace=trace.path,
        episode_id=str(run.get("episode_id", "")),
        agent=_label(str(run.get("agent") or "unknown")),
        scenario=scenario.id,
        task=task.id,
        workflow=task.workflow,
        golden_length=len(task.golden_path.steps),
        seed=int(condition.get("seed", 0)),
        profile=_label(str(condition.get("profile", "strict"))),
        hazard_kinds=kinds,
        condition=_label(condition_name(condition, kinds)),
        intervention=_label(intervention_label(condition.get("interventions"))),
        answered=bool(submitted),
        answer=answer,
        correct=correct,
        episode_failure=episode_failure,
        premature=bool(reasons),
        premature_reasons=reasons,
        verdicts=verdicts,
        failures=failures,
        calls=len(scorer.calls),
        redundant_calls=redundant,
        ended=_label(ended[0].get("reason")) if ended else None,
        agent_outcome=_label(outcome),
        answer_rule=_label(judged.rule if not _placeholder(answer) or judged.correct else "placeholder")
        if judged is not None
        else "no_answer"
        if has_answer
        else "no_expected_answer",
        judged=has_answer,
        warnings=warnings,
        refused_answers=len(by_type.get("answer_refused", ())),
        **research,
    )


def _research(
    scorer: _Scorer, scenario: Scenario, task: Task, condition: dict[str, Any], correct: bool, ended: dict[str, Any]
) -> dict[str, Any]:
    """The per-episode parts of the research quantities (scoring/trajectory.py, scoring/values.py)."""
    from mcp_hazard.scoring.trajectory import golden_calls, trajectory_match
    from mcp_hazard.scoring.values import classify_calls

    golden = golden_calls(scenario, task)
    matched, rule = trajectory_match(scorer.calls, golden)
    classes = [] if correct else [c for _, c in classify_calls(scorer.calls, scenario, task, golden)]
    interventions = condition.get("interventions")
    listed = interventions if isinstance(interventions, list) else []
    names = [str(i) for i in listed if str(i).startswith("names=")]
    generated = scenario.generated
    # A name-policy intervention keeps its `names=` label, so it never merges with a generated file's own policy.
    policy = names[-1] if names else (generated.names if generated is not None else "original")
    problem = scenario.id if generated is None else generated.problem + ("-restate" if generated.restate else "")
    label, repeat = ended.get("label"), ended.get("repeat")
    return {
        "depth": golden.depth, "trajectory_match": matched, "trajectory_rule": rule,
        "call_classes": [_label(c) for c in classes], "name_policy": _label(policy), "problem": problem,
        "agent_label": _label(label) if isinstance(label, str) else None,
        "repeat": repeat if isinstance(repeat, int) and not isinstance(repeat, bool) else None,
    }  # fmt: skip

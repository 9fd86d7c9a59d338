"""The trace set the scoring bench measures (bench/score_throughput.py), templated from real seed episodes
(bench/score_seeds.py).

2. Generated set. A matrix seed x agent x profile x condition x task is filled with those seed traces, templated: each
   agent name draws a behaviour from its own mix, the seed / profile / agent / episode id / timestamps are rewritten,
   some correct answers are replaced by wrong ones (invented number, "I don't know", a value seen in a result), and
   short episodes are padded to 8-15 events with real extra calls (successful calls of tools no hazard targets, slots
   renumbered) or re-listings; about 12.5 events per episode. A `random.Random` owned by the bench drives every
   choice, so the set is the same on every run. Files go to DIR/<agent>/<episode_id>.jsonl with a manifest; a DIR
   that already holds the same set (same manifest, same file count, its scenario files still where its traces say)
   is reused.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from bench.score_seeds import AGENTS, BEHAVIOURS, CONDITIONS, GAVE_UP, SCENARIO_DIR, run_seed_episodes

GENERATOR_VERSION = 2
BENCH_SEED = 20260314
MANIFEST = "bench-manifest.json"
SLOT_MARK = -987654321
PROFILES = ("strict", "guided")


# -- templates ---------------------------------------------------------------------------------------------------------


def _rest(event: dict[str, Any]) -> str:
    """An event's JSON without seq and ts, minus the opening brace: a line is '{"seq":N,"ts":"T",' + rest."""
    body = {k: v for k, v in event.items() if k not in ("seq", "ts")}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))[1:]


@dataclass
class Template:
    scenario: str
    task: str
    condition: str
    behaviour: str
    started: dict[str, Any]
    head: list[str]  # rests of the events before the insertion point (answer, else end)
    tail: list[str]  # rests from the insertion point on
    answer: Any = None  # the submitted answer, when correct and replaceable
    answer_index: int | None = None  # index in tail of the answer_submitted event
    wrong: list[str] = field(default_factory=list)
    pads: list[tuple[str, str, str]] = field(default_factory=list)  # (tool, rest before slot, rest after slot)
    relist: str | None = None  # rest of the episode's first tools_listed event
    next_slot: dict[str, int] = field(default_factory=dict)


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [str(value)]
    return []


def build_template(condition: str, behaviour: str, path: Path, scenarios: dict[str, Any]) -> Template:
    from mcp_hazard.scenario.answers import answer_matches, parse_number
    from mcp_hazard.trace.reader import read_trace

    events = read_trace(path).events
    started = {k: v for k, v in events[0].items() if k not in ("seq", "ts")}
    body = events[1:]
    cut = next((i for i, e in enumerate(body) if e["type"] == "answer_submitted"), None)
    if cut is None:
        cut = next((i for i, e in enumerate(body) if e["type"] == "episode_ended"), len(body))
    scenario = scenarios[started["scenario"]["id"]]
    task = scenario.task(started["task"])
    tpl = Template(
        scenario=scenario.id, task=task.id, condition=condition, behaviour=behaviour, started=started,
        head=[_rest(e) for e in body[:cut]], tail=[_rest(e) for e in body[cut:]],
    )  # fmt: skip
    tpl.relist = next((r for r in tpl.head if r.startswith('"type":"tools_listed"')), None)
    targeted = {t for h in started["hazards"] for t in h.get("targets", [])}
    seen: list[str] = []
    for event in body:
        if event["type"] != "tool_called":
            continue
        tpl.next_slot[event["tool"]] = max(tpl.next_slot.get(event["tool"], 1), event["slot"] + 1)
        if event["outcome"] == "ok":
            seen.extend(_scalars(event.get("result")))
            if event["tool"] not in targeted and event["tool"] in {t.name for t in scenario.tools}:
                pad = {k: v for k, v in event.items() if k not in ("seq", "ts")}
                pad["slot"] = SLOT_MARK
                before, after = _rest(pad).split(str(SLOT_MARK), 1)
                tpl.pads.append((event["tool"], before, after))
    if cut < len(body) and body[cut]["type"] == "answer_submitted":
        answer = body[cut]["answer"]
        if answer_matches(task.answer, answer):
            tpl.answer, tpl.answer_index = answer, 0
            number = parse_number(answer)
            if number is not None:
                tpl.wrong.append(f"{number * 1.1 + 3:.2f}")  # a number nobody returned: invented
            tpl.wrong.append(GAVE_UP)
            other = next((s for s in reversed(seen) if s != answer and not answer_matches(task.answer, s)), None)
            if other is not None:
                tpl.wrong.append(other)  # a value a tool did return: wrong_answer
    return tpl


def build_templates(work: Path) -> dict[tuple[str, str, str, str], Template]:
    from mcp_hazard.load import load_scenarios

    scenarios = {s.id: s.model for s in load_scenarios([str(SCENARIO_DIR)])}
    templates: dict[tuple[str, str, str, str], Template] = {}
    for condition, behaviour, path in run_seed_episodes(work):
        tpl = build_template(condition, behaviour, path, scenarios)
        templates[(tpl.scenario, tpl.task, condition, behaviour)] = tpl
    # Padding calls: a template's own successful calls of untargeted tools, plus the explorer's calls of untargeted
    # tools under the same condition (real calls through the server; the hazards did not touch them).
    for key, tpl in list(templates.items()):
        if key[3] == "explore":
            continue
        explorer = templates.get((*key[:3], "explore"))
        if explorer is not None:
            own = {tool for tool, _, _ in tpl.pads}
            tpl.pads.extend(pad for pad in explorer.pads if pad[0] not in own)
    return {key: tpl for key, tpl in templates.items() if key[3] != "explore"}


# -- the generated set -------------------------------------------------------------------------------------------------


def _manifest(episodes: int) -> dict[str, Any]:
    """What decides the set: a changed scenario file (or generator) means a new set."""
    digest = hashlib.sha256()
    for file in sorted(SCENARIO_DIR.glob("*.yaml")):
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return {"generator": GENERATOR_VERSION, "episodes": episodes, "seed": BENCH_SEED, "scenarios": digest.hexdigest()}


def existing_set(directory: Path, episodes: int) -> dict[str, Any] | None:
    """The manifest of a complete set of `episodes` traces already in `directory`, else None."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    expected = _manifest(episodes)
    if {k: manifest.get(k) for k in expected} != expected:
        return None
    count = sum(1 for _ in directory.rglob("*.jsonl"))
    return manifest if count == episodes and _scenarios_found(directory) else None


def _scenarios_found(directory: Path) -> bool:
    """Whether the set's traces can be scored from here: they name their scenario files by the absolute path in the
    checkout that generated them, and a set made by a checkout that has since gone would score no episode."""
    first = next(directory.rglob("*.jsonl"), None)
    try:
        with open(first or directory / MANIFEST, encoding="utf-8") as handle:
            path = json.loads(handle.readline())["scenario"]["path"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return isinstance(path, str) and Path(path).is_file()


def generate(directory: Path, episodes: int, templates: dict[tuple[str, str, str, str], Template]) -> dict[str, Any]:
    rng = Random(BENCH_SEED)
    tasks = sorted({(s, t) for (s, t, _, _) in templates})
    # conditions each task has for every behaviour (a hazard that cannot act on a task is not run on it)
    per_task = {key: [c for c in CONDITIONS if all((*key, c, b) in templates for b in BEHAVIOURS)] for key in tasks}
    cells = [
        (agent, profile, condition, key)
        for agent in AGENTS
        for profile in PROFILES
        for condition in CONDITIONS
        for key in tasks
        if condition in per_task[key]
    ]
    if not cells:
        raise RuntimeError("no seed traces: the shipped scenarios produced no episode")
    for agent in AGENTS:
        (directory / agent).mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 3, 14, 8, 0, 0)
    total_events = 0
    written = 0
    seed = 0
    while written < episodes:
        for agent, profile, condition, key in cells:
            if written >= episodes:
                break
            mix, p_wrong = AGENTS[agent]
            behaviour = rng.choices(list(mix), weights=list(mix.values()))[0]
            tpl = templates[(*key, condition, behaviour)]
            episode_id = f"{key[0]}.{key[1]}.seed{seed}.{rng.getrandbits(32):08x}"
            started = dict(tpl.started)
            started["condition"] = {**started["condition"], "seed": seed, "profile": profile}
            started["run"] = {"episode_id": episode_id, "transport": "memory", "agent": agent}
            lines = [_rest(started)]
            lines.extend(tpl.head)
            length = rng.randint(8, 15)
            missing = length - 1 - len(tpl.head) - len(tpl.tail)
            slots = dict(tpl.next_slot)
            for _ in range(max(0, missing)):
                if tpl.pads and rng.random() < 0.95:
                    tool, before, after = rng.choice(tpl.pads)
                    slot = slots.get(tool, 1)
                    slots[tool] = slot + 1
                    lines.append(f"{before}{slot}{after}")
                elif tpl.relist is not None:
                    lines.append(tpl.relist)
            tail = list(tpl.tail)
            if tpl.answer_index is not None and tpl.wrong and rng.random() < p_wrong:
                wrong = rng.choice(tpl.wrong)
                tail[tpl.answer_index] = _rest({"type": "answer_submitted", "answer": wrong, "slot": 1})
            lines.extend(tail)
            base = start + dt.timedelta(seconds=written * 2.5)
            out = io.StringIO()
            for seq, rest in enumerate(lines):
                ts = (base + dt.timedelta(microseconds=seq * 1337)).isoformat(timespec="microseconds") + "Z"
                out.write(f'{{"seq":{seq},"ts":"{ts}",{rest}\n')
            (directory / agent / f"{episode_id}.jsonl").write_text(out.getvalue(), encoding="utf-8")
            total_events += len(lines)
            written += 1
        seed += 1
    manifest = {**_manifest(episodes), "events": total_events, "seeds": seed, "cells_per_seed": len(cells)}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest

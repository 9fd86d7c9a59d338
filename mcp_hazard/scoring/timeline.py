"""A trace as a short, readable timeline for the report's drill-down: one step per event, clipped to a line or two.

Each step is a list, `[ms, kind, title, sent, got, mark]`, to keep 10,000 episodes small in one HTML file:
`ms` since the episode started (None without timestamps), `kind` the event type in one word, `title` what happened,
`sent` what the agent sent (arguments, answer), `got` what it was shown (result, served text, error), and `mark`
"hazard" for an injected fault (a firing, or a call a hazard acted on), "error" for a call that failed otherwise,
"answer" for the answer, else "". The full events stay in the trace file, whose path the drill-down shows.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

SENT_CHARS = 160
GOT_CHARS = 240
Step = list[Any]

_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)


def clip(value: Any, limit: int) -> str:
    """`value` as one line of at most `limit` characters (JSON unless it is text)."""
    text = value if isinstance(value, str) else _ENCODER.encode(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(event: dict[str, Any], start: datetime | None) -> int | None:
    value = event.get("ts")
    if start is None or not isinstance(value, str):
        return None
    try:
        return round((datetime.fromisoformat(value) - start).total_seconds() * 1000)
    except (ValueError, TypeError):
        return None


def _call(event: dict[str, Any]) -> tuple[str, str, str, str]:
    outcome = str(event.get("outcome"))
    title = f"{event.get('tool')} #{event.get('slot')} → {outcome}"
    if outcome == "ok":
        got = event.get("text") if event.get("text") is not None else event.get("result")
    else:
        got = event.get("error") or outcome
    mark = "hazard" if event.get("hazards") else "" if outcome == "ok" else "error"
    return title, clip(event.get("arguments"), SENT_CHARS), clip(got, GOT_CHARS), mark


def _step(event: dict[str, Any]) -> tuple[str, str, str, str, str] | None:
    kind = event.get("type")
    if kind == "tool_called":
        return ("call", *_call(event))
    if kind == "hazard_fired":
        title = f"{event.get('kind')} fired on {event.get('tool')} #{event.get('slot')} ({event.get('failpoint')})"
        # What the hazard did is the trace's record, never shown to the agent: it goes beside the title.
        return "hazard", f"{title}: {clip(event.get('change'), GOT_CHARS)}", "", "", "hazard"
    if kind == "tools_listed":
        tools = [str(t) for t in event.get("tools") or []]
        return "listed", f"listed {len(tools)} tools", "", clip(", ".join(tools), GOT_CHARS), ""
    if kind == "list_changed":
        return "changed", "tool list changed (announced)", "", "", "hazard"
    if kind == "task_read":
        return "task", f"read the task ({event.get('via')})", "", "", ""
    if kind == "answer_submitted":
        return "answer", "submitted an answer", clip(event.get("answer"), SENT_CHARS), "", "answer"
    if kind == "call_refused":
        return (
            "refused",
            f"{event.get('tool')} refused ({event.get('reason')})",
            clip(event.get("arguments"), SENT_CHARS),
            "",
            "error",
        )
    if kind == "frame_refused":
        return (
            "frame",
            f"malformed frame refused ({event.get('code')})",
            "",
            clip(event.get("message"), GOT_CHARS),
            "error",
        )
    if kind == "episode_ended":
        return "ended", f"episode ended: {event.get('reason')}", "", "", ""
    if kind == "agent_ended":
        notes = [clip(e.get("detail") or e.get("kind") or e, 120) for e in event.get("events") or []]
        got = "; ".join(filter(None, [str(event.get("detail") or ""), *notes]))
        return "agent", f"agent {event.get('outcome')}", "", clip(got, GOT_CHARS), ""
    return None  # episode_started: its facts are in the episode's header


def timeline(events: list[dict[str, Any]]) -> list[Step]:
    """The steps of one trace, in trace order."""
    start = None
    if events and isinstance(events[0].get("ts"), str):
        try:
            start = datetime.fromisoformat(events[0]["ts"])
        except ValueError:
            start = None
    steps: list[Step] = []
    for event in events:
        step = _step(event)
        if step is not None:
            steps.append([_ms(event, start), *step])
    return steps

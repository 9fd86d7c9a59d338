"""A trace as a readable timeline for the report's drill-down: one step per event.

Each step is a list, `[ms, kind, title, sent, got, mark]`, to keep 10,000 episodes small in one HTML file:
`ms` since the episode started (None without timestamps), `kind` the event type in one word, `title` what happened
(one line), `sent` what the agent sent (arguments, answer), `got` what it was shown (result, served text, error), and
`mark` "hazard" for an injected fault (a firing, or a call a hazard acted on), "error" for a call that failed
otherwise, "answer" for the answer, else "". `sent` and `got` are whole, up to FULL_CHARS each: the page shows a line
of each and opens the rest on a click, since a silently wrong value may sit anywhere in a result. A longer value is
cut there with "(N more characters)"; the trace file, whose path the drill-down shows, has every event whole.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

NOTE_CHARS = 120  # of one event the agent reported, in the `agent_ended` step
FULL_CHARS = 20_000  # of one value in the report: the longest the shipped scenarios show is about 1,600
Step = list[Any]

_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)


def clip(value: Any, limit: int) -> str:
    """`value` as one line of at most `limit` characters (JSON unless it is text)."""
    text = value if isinstance(value, str) else _ENCODER.encode(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def whole(value: Any, limit: int = FULL_CHARS) -> str:
    """`value` as text (JSON unless it is text), line breaks kept, cut after `limit` characters with how many more
    there were."""
    text = value if isinstance(value, str) else _ENCODER.encode(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters; the trace has them)"


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
    return title, whole(event.get("arguments")), whole(got), mark


def _step(event: dict[str, Any]) -> tuple[str, str, str, str, str] | None:
    kind = event.get("type")
    if kind == "tool_called":
        return ("call", *_call(event))
    if kind == "hazard_fired":
        title = f"{event.get('kind')} fired on {event.get('tool')} #{event.get('slot')} ({event.get('failpoint')})"
        # What the hazard did is the trace's record, never shown to the agent: it goes beside the title.
        return "hazard", f"{title}: {whole(event.get('change'))}", "", "", "hazard"
    if kind == "tools_listed":
        listed = event.get("tools")
        tools = [str(t) for t in listed] if isinstance(listed, list) else []
        return "listed", f"listed {len(tools)} tools", "", whole(", ".join(tools)), ""
    if kind == "list_changed":
        return "changed", "tool list changed (announced)", "", "", "hazard"
    if kind == "task_read":
        return "task", f"read the task ({event.get('via')})", "", "", ""
    if kind == "answer_submitted":
        return "answer", "submitted an answer", whole(event.get("answer")), "", "answer"
    if kind == "call_refused":
        return (
            "refused",
            f"{event.get('tool')} refused ({event.get('reason')})",
            whole(event.get("arguments")),
            "",
            "error",
        )
    if kind == "frame_refused":
        return (
            "frame",
            f"malformed frame refused ({event.get('code')})",
            "",
            whole(event.get("message")),
            "error",
        )
    if kind == "episode_ended":
        return "ended", f"episode ended: {event.get('reason')}", "", "", ""
    if kind == "agent_ended":
        told = event.get("events")
        notes = [clip((e.get("detail") or e.get("kind") or e) if isinstance(e, dict) else e, NOTE_CHARS)
                 for e in (told if isinstance(told, list) else [])]  # fmt: skip
        got = "; ".join(filter(None, [str(event.get("detail") or ""), *notes]))
        return "agent", f"agent {event.get('outcome')}", "", whole(got), ""
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

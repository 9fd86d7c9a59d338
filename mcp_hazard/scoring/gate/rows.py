"""The fields of report.json's per-episode rows that `gate` and `diff` read, checked before they read them: a report
may be a CI artifact from elsewhere, damaged or edited, and a row whose seed is a list or whose agent is an object
would otherwise end in a traceback deep in the pairing. Only these fields are checked, and the rows are kept as they
are: the rest of a row (the HTML drill-down's fields) is not the gate's business."""

from __future__ import annotations

from typing import Any, NotRequired

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic reads typing's TypedDict only from Python 3.12

_STRICT = ConfigDict(strict=True)


class _Firing(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    kind: str
    recovered: NotRequired[bool | None]


class _Known(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    episode_id: str
    agent: str
    scenario: str
    task: str
    condition: str
    interventions: NotRequired[str]
    profile: NotRequired[str]
    seed: int
    repeat: NotRequired[int | None]
    correct: bool
    agent_outcome: NotRequired[str | None]
    answer_rule: NotRequired[str | None]
    hazard_kinds: NotRequired[list[str]]
    hazards: NotRequired[list[_Firing]]
    duration_s: NotRequired[float | None]


_Row = TypedDict("_Row", {"class": NotRequired[str | None]})  # a key that is a keyword


class _GateRow(_Known, _Row):
    __pydantic_config__ = _STRICT  # type: ignore[misc]


_ROWS: TypeAdapter[list[_GateRow]] = TypeAdapter(list[_GateRow])


def row_problem(rows: Any) -> str | None:
    """`per_episode[I].FIELD: what is wrong` for the first row field the gate cannot read, None when all can be."""
    try:
        _ROWS.validate_python(rows)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = "per_episode" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
        return f"{where}: {error['msg']}"
    return None

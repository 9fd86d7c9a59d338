"""Match a submitted answer against a task's canonical answer under its matching rule."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

from mcp_hazard.scenario.models import AnswerSpec

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")


def canonical_text(value: Any) -> str:
    """Trimmed, NFKC-normalised text with inner runs of white space folded: how every rule first sees an answer."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    else:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return " ".join(unicodedata.normalize("NFKC", text).split())


def parse_number(value: Any) -> float | None:
    """A number from an answer: a JSON number, or text such as '1,234.50', 'EUR 12.5' or '12.5 km' (one number only)."""
    if isinstance(value, bool | list | dict):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = canonical_text(value)
    text = re.sub(r"(?<=\d)[,_ ](?=\d{3}\b)", "", text)
    found = _NUMBER.findall(text)
    if len(found) != 1:
        return None
    number = float(found[0])
    return number if math.isfinite(number) else None


def _split_list(value: Any) -> list[str] | None:
    if isinstance(value, list):
        return [canonical_text(item).casefold() for item in value]
    if isinstance(value, str):
        parts = re.split(r"[,;\n]", value)
        return [canonical_text(part).casefold() for part in parts if part.strip()]
    return None


def answer_matches(spec: AnswerSpec, given: Any) -> bool:
    """True when `given` is an acceptable answer under `spec`'s rule (docs/scenario-format.md states each rule)."""
    if given is None:
        return False
    if spec.match == "exact":
        return canonical_text(given) == canonical_text(spec.value)
    if spec.match == "case_insensitive":
        return canonical_text(given).casefold() == canonical_text(spec.value).casefold()
    if spec.match == "numeric":
        number = parse_number(given)
        return number is not None and abs(number - float(spec.value)) <= spec.tolerance + 1e-9
    if spec.match == "one_of":
        text = canonical_text(given).casefold()
        return any(text == canonical_text(option).casefold() for option in spec.value)
    expected = sorted(canonical_text(item).casefold() for item in spec.value)
    items = _split_list(given)
    return items is not None and sorted(items) == expected

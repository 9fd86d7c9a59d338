"""Generic repairs a careful agent makes without knowing the fault: read a drifted result back into data, and
match names (of tools, arguments and fields) by their words.

Nothing here reads the hazard configuration; it works from what MCP shows: text, schemas and descriptions.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_hazard.json_parse import loads

_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%°³/]+)?\s*$")
_LABEL_LINE = re.compile(r"^(?P<path>[^:]+):\s?(?P<value>.*)$")


def words(name: str) -> set[str]:
    """`flight_id`, `flightId`, `Flight Id` and `flight-id` all give {'flight', 'id'}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return {w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w}


def similarity(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def snake(label: str) -> str:
    """A display label back to a field name: `Price (EUR)` -> `price_eur`, `Flight Id` -> `flight_id`."""
    label = label.strip()
    unit = re.search(r"\(([^)]+)\)\s*$", label)
    base = label[: unit.start()] if unit else label
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", base)
    name = "_".join(w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w)
    if unit:
        name += "_" + unit.group(1).strip().lower().replace("°", "").replace("³", "3")
    return name


def _scalar(text: str) -> Any:
    text = text.strip()
    if text in ("yes", "no"):
        return text == "yes"
    if text == "-":
        return None
    match = _NUMBER_UNIT.match(text)
    if match:
        number = float(match.group(1))
        return int(number) if number.is_integer() and "." not in match.group(1) else number
    return text


def unwrap_units(value: Any) -> Any:
    """Numbers served as text with a unit (`"167.0 EUR"`) become numbers again."""
    if isinstance(value, dict):
        return {k: unwrap_units(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_units(v) for v in value]
    if isinstance(value, str):
        match = _NUMBER_UNIT.match(value)
        if match and match.group(2) is not None and len(match.group(2)) <= 5:  # "4" alone may be a code: kept
            number = float(match.group(1))
            return int(number) if number.is_integer() and "." not in match.group(1) else number
    return value


def unalias(value: Any) -> Any:
    """Display-label keys (`Price (EUR)`) back to field names (`price_eur`)."""
    if isinstance(value, dict):
        return {(snake(k) if (" " in k or "(" in k or k[:1].isupper()) else k): unalias(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unalias(v) for v in value]
    return value


def parse_label_lines(text: str) -> Any | None:
    """`Flights #1 / Price Eur: 189.0` lines back into nested data; None when the text is not of that form."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not all(_LABEL_LINE.match(line) for line in lines):
        return None
    root: dict[str, Any] = {}
    for line in lines:
        match = _LABEL_LINE.match(line)
        assert match is not None
        parts = [p.strip() for p in match.group("path").split(" / ")]
        node: Any = root
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            indexed = re.match(r"^(.*?)\s*#(\d+)$", part)
            key = snake(indexed.group(1)) if indexed else snake(part)
            if indexed:
                items = node.setdefault(key, [])
                position = int(indexed.group(2)) - 1
                while len(items) <= position:
                    items.append({})
                if last:
                    items[position] = _scalar(match.group("value"))
                else:
                    node = items[position]
            elif last:
                node[key] = [] if match.group("value").strip() == "(none)" else _scalar(match.group("value"))
            else:
                node = node.setdefault(key, {})
    return root


def first_json(text: str) -> Any | None:
    """The first JSON object or list in a text that may carry prose around it."""
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "{[":
            try:
                value, _end = decoder.raw_decode(text[start:])
            except json.JSONDecodeError:
                continue
            return value
    return None


def read_result(text: str, structured: Any = None) -> Any:
    """Data from a result however it was served: structured content, JSON, JSON with prose, label lines, units,
    aliased keys, or a cache wrapper around the data."""
    value = structured
    if value is None:
        try:
            value = loads(text)
        except json.JSONDecodeError:
            if text.lstrip()[:1] in ("{", "["):
                value = first_json(text)
            if value is None:
                value = parse_label_lines(text)
            if value is None:
                value = first_json(text)
            if value is None:
                return text
    value = unalias(unwrap_units(value))
    if isinstance(value, dict) and set(value) == {"data", "cache"} and isinstance(value["data"], dict | list):
        return value["data"]
    return value


def stale(value: Any) -> bool:
    """A result that says of itself it may be out of date."""
    if not isinstance(value, dict):
        return False
    return bool(value.get("stale")) or str(value.get("source", "")).lower() in ("cache", "cached")


# unit -> (dimension, size in a base unit), so a field in cents can stand in for one in euros
UNITS = {
    "cents": ("money", 0.01), "eur": ("money", 1.0), "usd": ("money", 1.0), "gbp": ("money", 1.0),
    "g": ("mass", 0.001), "kg": ("mass", 1.0), "mm": ("length", 0.001), "cm": ("length", 0.01),
    "m": ("length", 1.0), "km": ("length", 1000.0), "minutes": ("time", 60.0), "hours": ("time", 3600.0),
    "seconds": ("time", 1.0),
}  # fmt: skip


QUANTITIES = {
    "amount", "balance", "total", "price", "cost", "fee", "count", "qty", "quantity", "sum", "value", "rate",
    "weight", "length", "width", "height", "distance", "duration", "minutes", "hours", "days", "stock", "available",
    "number", "score", "level", "size", "volume",
}  # fmt: skip


def _unit(name: str) -> str | None:
    if "minor" in words(name):  # "minor units" is how ledgers say cents
        return "cents"
    last = name.lower().rsplit("_", 1)[-1]
    return last if last in UNITS else None


def _scaled(value: Any, found: str, wanted: str) -> Any:
    have, want = _unit(found), _unit(wanted)
    if not isinstance(value, int | float) or isinstance(value, bool) or have is None:
        return value
    if want is None:
        want = "eur" if UNITS[have][0] == "money" else None
    if want is None or UNITS[have][0] != UNITS[want][0] or have == want:
        return value
    return round(value * UNITS[have][1] / UNITS[want][1], 6)


def convert_field(value: dict[str, Any], wanted: str) -> Any:
    """Read field `wanted` from a result that names it differently (`fare_cents` for `price_eur`), converting
    between units of one dimension (cents and euros, grams and kilograms, millimetres and centimetres)."""
    if wanted in value:
        return value[wanted]
    best, best_score = None, 0.0
    for key in value:
        score = similarity(key, wanted)
        if score > best_score:
            best, best_score = key, score
    if best is not None and best_score >= 0.5:  # half the words in common: `flight` for `flight_id`
        return _scaled(value[best], best, wanted)
    want_unit = _unit(wanted)
    numbers = [k for k, v in value.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    if want_unit is None and len(numbers) == 1 and words(wanted) & QUANTITIES:  # the one number, for a quantity
        return _scaled(value[numbers[0]], numbers[0], wanted)
    same_dimension = [
        key for key in numbers
        if want_unit and (have := _unit(key)) is not None and UNITS[have][0] == UNITS[want_unit][0]
    ]  # fmt: skip
    if same_dimension:  # the same kind of quantity; the one whose name shares most words (width_mm for width_cm)
        key = max(same_dimension, key=lambda k: (similarity(k, wanted), -same_dimension.index(k)))
        return _scaled(value[key], key, wanted)
    return None


def coerce_numbers(value: Any) -> Any:
    """Numbers served as bare text (`"12"`, `"2318.47"`) as numbers: a second reading when arithmetic failed."""
    if isinstance(value, dict):
        return {k: coerce_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [coerce_numbers(v) for v in value]
    if isinstance(value, str) and re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()):
        number = float(value)
        return int(number) if number.is_integer() and "." not in value else number
    return value
